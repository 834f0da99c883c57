//! Datagrams of `dialect new`'s template dialect ("MG"), built from the template's comments,
//! not from its loader: shared by tests/dialect.rs and tests/dialect_lua.rs.
#![allow(dead_code)]

/// A template datagram: "MG", type, sequence, body size (the body's, unless `size` says),
/// body, CRC-32 of it all (little endian).
pub fn mg(kind: u8, seq: u16, body: &[u8], size: Option<u16>) -> Vec<u8> {
    let mut d = b"MG".to_vec();
    d.push(kind);
    d.extend(seq.to_le_bytes());
    d.extend(size.unwrap_or(body.len() as u16).to_le_bytes());
    d.extend(body);
    let crc = crc32fast::hash(&d);
    d.extend(crc.to_le_bytes());
    d
}

/// A template entity: id, kind, x, y, then `has_health` (the top bit) and the health.
pub fn entity(id: u32, kind: u8, x: i16, y: i16, health: Option<u8>) -> Vec<u8> {
    let mut e = id.to_le_bytes().to_vec();
    e.push(kind);
    e.extend(x.to_le_bytes());
    e.extend(y.to_le_bytes());
    e.push(if health.is_some() { 0x80 } else { 0 });
    e.extend(health);
    e
}
