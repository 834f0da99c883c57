//! Datagrams: which dialect a UDP payload speaks (by its first bytes), and each dialect's
//! header, integrity and compression checks.

pub mod rtype;

/// The protocol dialects, told apart by their first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dialect {
    /// Document 002/001: magic `A3 5F C8 1D`.
    Rtype,
}

impl Dialect {
    pub const fn name(self) -> &'static str {
        match self {
            Dialect::Rtype => "rtype",
        }
    }

    /// The dialect whose magic starts `payload`, if any. New dialects plug in here.
    pub fn detect(payload: &[u8]) -> Option<Dialect> {
        payload.starts_with(&crate::proto::rtype::MAGIC).then_some(Dialect::Rtype)
    }
}
