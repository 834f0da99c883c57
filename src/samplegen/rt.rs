//! Deterministic rt samples (document 003): a conversation as the document describes it
//! (big-endian, every packet type, every reliable packet acknowledged) beside one breaking a rule
//! at a time, and the real server's little-endian dialect (spec-notes B).
//!
//! Payloads and headers are encoded from the description's nodes, as [`super::encode`] does for
//! rtype, by [`encode`] here: rt needs both byte orders and the fixed `char name[32]` arrays, which
//! the rtype encoder does not write. Each sample states the findings it injects as it injects
//! them; those become `NAME.expected.txt`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;

use serde_json::{json, Value};

use super::pcap::{udp_frame, Link, PcapWriter};
use super::scenarios::expected_text;
use super::script::{invalid, Expected, Record, T0_US};
use crate::app::write_file;
use crate::proto::rt::{self as desc, FLAG_COMPRESSED, FLAG_RELIABLE, HEADER};
use crate::proto::schema::Endian;
use crate::proto::schema::{Message, Node, Ty};
use crate::proto::Rule;

mod document;
mod server;

use document::big_endian;
use server::little_endian;

/// Gap between two datagrams, so capture order is time order.
const GAP_US: u64 = 250;
/// One game tick at 60 Hz.
const TICK_US: u64 = 16_667;

/// Encodes `nodes` from the JSON object `value` (keys are the description's field names) in
/// `endian`, appending to `out`. Integers are numbers; byte arrays (`Field::array`) are strings
/// (text, NUL-padded) or arrays of byte values; repeats are arrays of objects (the count is their
/// length unless given); switches take the tag and the case's object under the case's name.
pub fn encode(
    nodes: &'static [Node],
    value: &Value,
    endian: Endian,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    for node in nodes {
        match node {
            Node::Field(f) => {
                let v = member(value, f.name)?;
                if f.array > 0 {
                    let bytes = match v {
                        Value::String(s) => s.as_bytes().to_vec(),
                        _ => bytes_of(f.name, v)?,
                    };
                    if bytes.len() > usize::from(f.array) {
                        return Err(format!(
                            "`{}` is {} bytes, more than its {}",
                            f.name,
                            bytes.len(),
                            f.array
                        ));
                    }
                    out.extend_from_slice(&bytes);
                    out.resize(out.len() + usize::from(f.array) - bytes.len(), 0);
                } else {
                    int(f.name, f.ty, v, endian, out)?;
                }
            }
            Node::Repeat { count, item } => {
                let items = member(value, item.name)?
                    .as_array()
                    .ok_or_else(|| format!("`{}` must be an array", item.name))?;
                int(
                    count.name,
                    count.ty,
                    value.get(count.name).unwrap_or(&Value::from(items.len())),
                    endian,
                    out,
                )?;
                for it in items {
                    encode(item.nodes, it, endian, out)?;
                }
            }
            Node::Switch { tag, cases, .. } => {
                let t = member(value, tag.name)?;
                int(tag.name, tag.ty, t, endian, out)?;
                if let Some(case) = cases
                    .iter()
                    .find(|c| Some(u64::from(c.value)) == t.as_u64())
                {
                    encode(
                        case.group.nodes,
                        member(value, case.group.name)?,
                        endian,
                        out,
                    )?;
                } else if let Some(rest) = value.get("data") {
                    // A case the description does not give: raw bytes follow.
                    out.extend_from_slice(&bytes_of("data", rest)?);
                }
            }
            Node::Masked => return Err("rt has no masked fields".into()),
        }
    }
    Ok(())
}

fn member<'v>(value: &'v Value, name: &str) -> Result<&'v Value, String> {
    value
        .get(name)
        .ok_or_else(|| format!("missing field `{name}`"))
}

fn bytes_of(name: &str, value: &Value) -> Result<Vec<u8>, String> {
    let wrong = || format!("`{name}` must be an array of byte values");
    value
        .as_array()
        .ok_or_else(wrong)?
        .iter()
        .map(|b| {
            b.as_u64()
                .and_then(|b| u8::try_from(b).ok())
                .ok_or_else(wrong)
        })
        .collect()
}

fn int(name: &str, ty: Ty, value: &Value, endian: Endian, out: &mut Vec<u8>) -> Result<(), String> {
    let n = value
        .as_i64()
        .ok_or_else(|| format!("`{name}` must be an integer, not {value}"))?;
    let (width, min, max) = match ty {
        Ty::U8 => (1, 0, i64::from(u8::MAX)),
        Ty::U16 => (2, 0, i64::from(u16::MAX)),
        Ty::U32 => (4, 0, i64::from(u32::MAX)),
        Ty::I16 => (2, i64::from(i16::MIN), i64::from(i16::MAX)),
        Ty::I32 => (4, i64::from(i32::MIN), i64::from(i32::MAX)),
        Ty::F32 | Ty::Str8 => return Err(format!("`{name}`: rt has no {} fields", ty.name())),
    };
    if n < min || n > max {
        return Err(format!("`{name}` = {n} does not fit a {}", ty.name()));
    }
    let bytes = (n as u64).to_le_bytes();
    match endian {
        Endian::Little => out.extend_from_slice(&bytes[..width]),
        Endian::Big => out.extend(bytes[..width].iter().rev()),
    }
    Ok(())
}

/// One header, encoded from the description's header nodes.
pub fn header(endian: Endian, code: u8, flags: u8, sequence: u32, timestamp: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(desc::HEADER_LEN);
    let value = json!({"magic": u16::from_be_bytes(desc::MAGIC), "packet_type": code, "flags": flags, "sequence_number": sequence, "timestamp": timestamp});
    encode(HEADER, &value, endian, &mut out).expect("the header's values fit");
    out
}

fn message(code: u8) -> io::Result<&'static Message> {
    desc::message(code).ok_or_else(|| invalid(format!("no rt message 0x{code:02X}")))
}

/// Datagrams being written, with a clock, per-sender sequence numbers, and the findings the
/// sample is expected to produce.
pub(crate) struct Capture {
    pub records: Vec<Record>,
    pub expected: Expected,
    pub now_us: u64,
}

impl Capture {
    pub fn new() -> Capture {
        Capture {
            records: Vec::new(),
            expected: Expected::new(),
            now_us: T0_US,
        }
    }
    pub fn send(&mut self, from: SocketAddr, to: SocketAddr, bytes: Vec<u8>) {
        self.records.push(Record {
            ts_us: self.now_us,
            from,
            to,
            bytes,
        });
        self.now_us += GAP_US;
    }
    pub fn expect(&mut self, rule: Rule, count: u64) {
        *self.expected.entry(rule.id()).or_default() += count;
    }
    /// Milliseconds since the first datagram, for timestamps.
    pub fn millis(&self) -> u32 {
        ((self.now_us - T0_US) / 1000) as u32
    }

    /// The capture as a legacy pcap of Ethernet frames.
    pub fn pcap(&self) -> io::Result<Vec<u8>> {
        let mut w = PcapWriter::new(Vec::new(), Link::Ethernet.linktype())?;
        for r in &self.records {
            w.record(r.ts_us, &udp_frame(Link::Ethernet, r.from, r.to, &r.bytes)?)?;
        }
        w.finish()
    }

    /// Writes `NAME.pcap` (from `bytes`) and `NAME.expected.txt` into `dir`.
    pub fn write(&self, dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
        write_file(&dir.join(format!("{name}.pcap")), bytes)?;
        write_file(
            &dir.join(format!("{name}.expected.txt")),
            expected_text(&self.expected).as_bytes(),
        )
    }
}

fn addr(net: u8, host: u8, port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, net, host), port))
}

/// One side of an rt conversation: where it sends from and its next sequence number.
struct Peer {
    addr: SocketAddr,
    sequence: u32,
}

impl Peer {
    /// A peer at `addr` that has sent nothing yet.
    fn at(addr: SocketAddr) -> Peer {
        Peer { addr, sequence: 0 }
    }
}

/// An rt session in one byte order between a server and its clients.
struct Rt {
    capture: Capture,
    endian: Endian,
    server: SocketAddr,
}

impl Rt {
    fn new(endian: Endian, server: SocketAddr) -> Rt {
        Rt {
            capture: Capture::new(),
            endian,
            server,
        }
    }

    /// Sends `bytes` as the payload of a `code` packet from `from` to `to`; returns its sequence.
    fn raw(&mut self, from: &mut Peer, to: SocketAddr, code: u8, flags: u8, payload: &[u8]) -> u32 {
        from.sequence += 1;
        let mut d = header(
            self.endian,
            code,
            flags,
            from.sequence,
            self.capture.millis(),
        );
        d.extend_from_slice(payload);
        self.capture.send(from.addr, to, d);
        from.sequence
    }

    fn payload(&self, nodes: &'static [Node], value: &Value) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        encode(nodes, value, self.endian, &mut out).map_err(invalid)?;
        Ok(out)
    }

    /// Sends message `code` laid out as the document says.
    fn send(
        &mut self,
        from: &mut Peer,
        to: SocketAddr,
        code: u8,
        flags: u8,
        value: Value,
    ) -> io::Result<u32> {
        let payload = self.payload(message(code)?.body, &value)?;
        Ok(self.raw(from, to, code, flags, &payload))
    }

    /// Sends message `code` laid out as its variant number `variant` (real traffic).
    fn send_variant(
        &mut self,
        from: &mut Peer,
        to: SocketAddr,
        code: u8,
        variant: usize,
        flags: u8,
        value: Value,
    ) -> io::Result<u32> {
        let m = message(code)?;
        let nodes = m
            .variants
            .get(variant)
            .ok_or_else(|| invalid(format!("{} has no variant {variant}", m.name)))?
            .nodes;
        let payload = self.payload(nodes, &value)?;
        self.capture.expect(m.variants[variant].rule, 1);
        Ok(self.raw(from, to, code, flags, &payload))
    }

    /// Acknowledges `sequence` as the document says (with the client's id).
    fn ack(
        &mut self,
        from: &mut Peer,
        to: SocketAddr,
        sequence: u32,
        client_id: u32,
    ) -> io::Result<()> {
        let value = json!({"acked_sequence": sequence, "received_timestamp": self.capture.millis(), "client_id": client_id});
        self.send(from, to, desc::ACKNOWLEDGMENT, 0, value)
            .map(drop)
    }

    /// Sends a reliable message from the server to `client`, which acknowledges it.
    fn reliable(
        &mut self,
        server: &mut Peer,
        client: &mut Peer,
        client_id: u32,
        code: u8,
        value: Value,
    ) -> io::Result<()> {
        let seq = self.send(server, client.addr, code, FLAG_RELIABLE, value)?;
        self.ack(client, self.server, seq, client_id)
    }
}

fn transform(id: u32, t: i64) -> Value {
    json!({"entity_id": id, "pos_x": 100 + 3 * t, "pos_y": 200 - t, "rotation": (t * 1000).rem_euclid(65536), "scale": 1000})
}

fn health(id: u32) -> Value {
    json!({"entity_id": id, "current_health": 90, "max_health": 100, "current_shield": 10, "max_shield": 50})
}

fn input_keys(t: u32) -> u16 {
    [0x0001, 0x0009, 0x0018, 0x0012, 0x0044][t as usize % 5]
}

/// Writes `rt-big-endian` and `rt-little-endian` (`.pcap` and `.expected.txt`) into `dir`.
pub fn write(dir: &Path) -> io::Result<()> {
    for (name, capture) in [
        ("rt-big-endian", big_endian()?),
        ("rt-little-endian", little_endian()?),
    ] {
        capture.write(dir, name, &capture.pcap()?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::rt::parse;
    use crate::message::{decode_message, NoFields};
    use crate::proto::profile::Profile;

    #[test]
    fn headers_encode_in_both_orders() {
        assert_eq!(
            header(Endian::Big, 0x10, 1, 0x0102_0304, 5),
            [0x52, 0x54, 0x10, 1, 1, 2, 3, 4, 0, 0, 0, 5]
        );
        assert_eq!(
            header(Endian::Little, 0x10, 1, 0x0102_0304, 5),
            [0x54, 0x52, 0x10, 1, 4, 3, 2, 1, 5, 0, 0, 0]
        );
    }

    #[test]
    fn encoder_round_trips_through_the_decoder() {
        let connect = desc::message(desc::CLIENT_CONNECT).unwrap();
        let mut payload = Vec::new();
        encode(
            connect.body,
            &json!({"protocol_version": 1, "player_name": "ann", "client_id": 7}),
            Endian::Big,
            &mut payload,
        )
        .unwrap();
        assert_eq!(payload.len(), 37);
        assert_eq!(&payload[..5], &[1, b'a', b'n', b'n', 0]);
        assert_eq!(&payload[33..], &[0, 0, 0, 7]);
        assert!(encode(
            connect.body,
            &json!({"protocol_version": 1, "player_name": "x".repeat(33), "client_id": 7}),
            Endian::Big,
            &mut payload
        )
        .is_err());
        let mut bytes = header(Endian::Big, desc::CLIENT_CONNECT, 0, 1, 0);
        bytes.extend(&payload[..37]);
        let mut findings = vec![];
        let d = parse(&bytes, None, &mut findings).unwrap();
        decode_message(
            connect,
            d.payload,
            12,
            Endian::Big,
            &Profile::document(),
            &crate::datagram::rt::MESSAGE_RULES,
            &mut NoFields,
            &mut findings,
        );
        assert!(findings.is_empty(), "{findings:?}");
    }

    #[test]
    fn samples_are_deterministic() {
        let (a, b) = (big_endian().unwrap(), big_endian().unwrap());
        assert_eq!(a.pcap().unwrap(), b.pcap().unwrap());
        assert_eq!(a.expected, b.expected);
        let le = little_endian().unwrap();
        assert_eq!(le.expected["rt.input.10-byte"], 80);
        assert_eq!(le.expected["rt.snapshot.no-world-tick"], 80);
    }
}
