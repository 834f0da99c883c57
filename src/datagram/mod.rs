//! Datagrams: which dialect a UDP payload speaks (by its first bytes), and each dialect's
//! header, integrity and compression checks.

pub mod rt;
pub mod rtnp;
pub mod rtype;

/// The protocol dialects, told apart by their first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dialect {
    /// Document 002/001: magic `A3 5F C8 1D`.
    Rtype,
    /// Document 003: magic 0x5254, `52 54` big-endian as documented or `54 52` little-endian.
    Rt,
    /// Document 004: a JSON object (`{`), a Cap'n Proto single-segment message
    /// (`00 00 00 00`, a plausible word count, a struct pointer), or a bare `PING` / `PONG`.
    Rtnp,
    /// A dialect description loaded for this run (`--dialect`), by its place among them.
    Described(u8),
}

impl Dialect {
    /// The bundled dialects (described ones are loaded per run: [`crate::describe::loaded`]).
    pub const ALL: [Dialect; 3] = [Dialect::Rtype, Dialect::Rt, Dialect::Rtnp];

    /// A number per dialect, for tables keyed by dialect and value.
    pub fn ordinal(self) -> u64 {
        match self {
            Dialect::Rtype => 0,
            Dialect::Rt => 1,
            Dialect::Rtnp => 2,
            Dialect::Described(i) => 3 + u64::from(i),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Rtype => "rtype",
            Dialect::Rt => "rt",
            Dialect::Rtnp => "rtnp",
            Dialect::Described(i) => crate::describe::loaded::all()
                .get(usize::from(i))
                .map_or("?", |l| l.described.description.id.as_str()),
        }
    }

    /// The dialect `payload` proves by itself: its first bytes, and a header (or framing) that is
    /// consistent beyond them. Ordinary UDP that merely starts the same way is not recognised; a
    /// datagram of a conversation already recognised is judged as that conversation's dialect
    /// without asking this. New dialects plug in here and in [`Dialect::detect`].
    pub fn recognise(payload: &[u8]) -> Option<Dialect> {
        Dialect::detect(payload).filter(|dialect| match dialect {
            Dialect::Rtype => rtype::consistent(payload),
            Dialect::Rt => rt::consistent(payload),
            Dialect::Rtnp => rtnp::consistent(payload),
            Dialect::Described(_) => true,
        })
    }

    /// The dialect whose first bytes start `payload`, if any: the cheap test that decides what the
    /// workers unpack ahead; [`Dialect::recognise`] decides what is judged.
    pub fn detect(payload: &[u8]) -> Option<Dialect> {
        if payload.starts_with(&crate::proto::rtype::MAGIC) {
            Some(Dialect::Rtype)
        } else if rt::endian_of(payload).is_some() {
            Some(Dialect::Rt)
        } else if rtnp::looks_like(payload) {
            Some(Dialect::Rtnp)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_by_first_bytes() {
        assert_eq!(
            Dialect::detect(&[0xA3, 0x5F, 0xC8, 0x1D, 1]),
            Some(Dialect::Rtype)
        );
        assert_eq!(Dialect::detect(b"RT\x01\x00"), Some(Dialect::Rt));
        assert_eq!(Dialect::detect(b"TR\x10\x01"), Some(Dialect::Rt));
        assert_eq!(
            Dialect::detect(b"{\"type\":\"snapshot\"}"),
            Some(Dialect::Rtnp)
        );
        assert_eq!(Dialect::detect(b"PING"), Some(Dialect::Rtnp));
        let envelope = [
            0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0x2a, 0, 0, 0, b'P', b'I',
            b'N', b'G', 0, 0, 0, 0,
        ];
        assert_eq!(Dialect::detect(&envelope), Some(Dialect::Rtnp));
        assert_eq!(Dialect::detect(&[0; 32]), None);
        assert_eq!(Dialect::detect(b"R"), None);
        assert_eq!(Dialect::detect(b"GET / HTTP/1.1"), None);
    }
}
