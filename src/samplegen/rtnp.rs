//! Deterministic rtnp samples (document 004): JSON messages in Cap'n Proto envelopes (a conforming
//! conversation beside one breaking a rule at a time), the same dialect as raw JSON datagrams,
//! and 8 KiB snapshots carried in IPv4 fragments.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;

use etherparse::{IpFragOffset, IpNumber, Ipv4Header};
use serde_json::{json, Value};

use super::pcap::{udp_frame, Link, PcapWriter};
use super::rt::Capture;
use super::script::invalid;
use crate::proto::rtnp::{MAX_DATAGRAM, SERVER_PORT};
use crate::proto::Rule;

/// A game tick at 60 Hz.
const TICK_US: u64 = 16_667;
/// The link's MTU: IPv4 datagrams larger than this go out in fragments.
const MTU: usize = 1500;

/// A Cap'n Proto envelope around `text` as spec-notes A describes it: one segment holding the
/// root struct pointer (no data words, one pointer) and a byte list with the NUL-terminated text,
/// padded to a whole word.
pub fn envelope(text: &str) -> Vec<u8> {
    let len = text.len() + 1;
    let text_words = len.div_ceil(8);
    let mut d = Vec::with_capacity(24 + text_words * 8);
    d.extend(0u32.to_le_bytes());
    d.extend(((2 + text_words) as u32).to_le_bytes());
    // Root: struct pointer, offset 0, 0 data words, 1 pointer word.
    d.extend(0u32.to_le_bytes());
    d.extend(0u16.to_le_bytes());
    d.extend(1u16.to_le_bytes());
    // The Text: list pointer, offset 0, byte elements, `len` of them.
    d.extend(1u32.to_le_bytes());
    d.extend(((len as u32) << 3 | 2).to_le_bytes());
    d.extend(text.as_bytes());
    d.resize(24 + text_words * 8, 0);
    d
}

fn addr(net: u8, host: u8, port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, net, host), port))
}

/// A JSON object with its members in the order given: serde_json's map (without its
/// `preserve_order` feature) would sort them, and where `type` stands is what the checks judge.
fn text(parts: &[(&str, Value)]) -> String {
    let members: Vec<String> = parts
        .iter()
        .map(|(k, v)| format!("{}:{v}", Value::from(*k)))
        .collect();
    format!("{{{}}}", members.join(","))
}

/// A conforming message: `type` first, then the members.
fn msg(kind: &str, members: &[(&str, Value)]) -> String {
    let mut parts = vec![("type", Value::from(kind))];
    parts.extend(members.iter().cloned());
    text(&parts)
}

fn keys(t: u32) -> Value {
    json!({"up": t.is_multiple_of(4), "down": t % 4 == 2, "left": false, "right": t.is_multiple_of(3), "space": t % 2 == 1})
}

/// A document-conforming snapshot entity.
fn entity(id: u32, t: u32) -> Value {
    json!({"networkId": id, "type": if id == 0 { "player_ship" } else { "enemy" },
           "position": {"x": 100.0 + f64::from(t) * 2.5, "y": 200.0 + f64::from(id) * 40.0},
           "velocity": {"x": 2.5, "y": 0.0},
           "sprite": {"spriteId": id % 4, "spriteSheetId": 0, "scale": 1.0, "rotation": 0.0},
           "health": 100u32.saturating_sub(id), "maxHealth": 100})
}

fn snapshot(epoch: u64, entities: &[Value]) -> String {
    msg(
        "snapshot",
        &[
            ("epoch", epoch.into()),
            ("entities", Value::from(entities.to_vec())),
        ],
    )
}

/// A session whose messages go raw or wrapped.
struct Rtnp {
    capture: Capture,
    wrap: bool,
    server: SocketAddr,
}

impl Rtnp {
    fn bytes(&self, text: &str) -> Vec<u8> {
        if self.wrap {
            envelope(text)
        } else {
            text.as_bytes().to_vec()
        }
    }
    fn client(&mut self, client: SocketAddr, text: &str) {
        let b = self.bytes(text);
        self.capture.send(client, self.server, b);
    }
    fn server(&mut self, client: SocketAddr, text: &str) {
        let b = self.bytes(text);
        self.capture.send(self.server, client, b);
    }
}

/// A conforming conversation: connect_request, assign_id, inputs and snapshots, disconnect.
fn conforming(s: &mut Rtnp, client: SocketAddr, name: &str, client_id: u32, ticks: u32) {
    s.client(
        client,
        &msg(
            "connect_request",
            &[("player_name", name.into()), ("version", "1.0".into())],
        ),
    );
    s.server(
        client,
        &msg("assign_id", &[("client_id", client_id.into())]),
    );
    for t in 0..ticks {
        s.capture.now_us += TICK_US;
        s.client(
            client,
            &msg(
                "player_input",
                &[("client_id", client_id.into()), ("keys", keys(t))],
            ),
        );
        s.server(
            client,
            &snapshot(u64::from(t), &[entity(0, t), entity(1, t)]),
        );
    }
    s.client(
        client,
        &msg(
            "disconnect",
            &[("client_id", client_id.into()), ("reason", "quit".into())],
        ),
    );
}

/// `rtnp-envelope`: every datagram in an envelope. Conversation 1 (ann) conforms; conversation 2
/// (bob) breaks one rule per datagram.
fn envelope_sample() -> Capture {
    let server = addr(5, 1, SERVER_PORT);
    let mut s = Rtnp {
        capture: Capture::new(),
        wrap: true,
        server,
    };
    conforming(&mut s, addr(5, 2, 41002), "ann", 5, 10);
    let bob = addr(5, 3, 41003);
    let e = |s: &mut Rtnp, rule: Rule| s.capture.expect(rule, 1);
    s.client(
        bob,
        &msg("connect_request", &[("player_name", "b".repeat(33).into())]),
    );
    e(&mut s, Rule::RtnpPlayerName);
    s.server(bob, &msg("assign_id", &[("client_id", 6.into())]));
    s.client(
        bob,
        &msg(
            "player_input",
            &[("client_id", 9.into()), ("keys", keys(0))],
        ),
    );
    e(&mut s, Rule::RtnpClientId);
    s.server(bob, &snapshot(0, &[entity(0, 0)]));
    s.server(bob, &snapshot(2, &[entity(0, 1)]));
    e(&mut s, Rule::RtnpEpochSequence);
    s.server(bob, &msg("snapshot", &[("entities", json!([]))]));
    e(&mut s, Rule::RtnpEpochMissing);
    s.server(bob, &snapshot(3, &[]));
    s.client(
        bob,
        &text(&[
            ("client_id", 6.into()),
            ("keys", keys(1)),
            ("type", "player_input".into()),
        ]),
    );
    e(&mut s, Rule::RtnpTypeNotFirst);
    s.client(bob, &msg("lobby_chat", &[("text", "hi".into())]));
    e(&mut s, Rule::RtnpUnknownType);
    s.client(bob, "PING");
    s.server(bob, "PONG");
    s.capture.expect(Rule::RtnpKeepaliveText, 2);
    let mut broken = envelope(&msg(
        "player_input",
        &[("client_id", 6.into()), ("keys", keys(2))],
    ));
    // The Text pointer is a far pointer, not a list of bytes.
    broken[16] = 2;
    s.capture.send(bob, server, broken);
    e(&mut s, Rule::RtnpEnvelope);
    s.client(bob, "{\"type\":\"player_input\",");
    e(&mut s, Rule::RtnpJsonInvalid);
    s.client(
        bob,
        &format!(
            "{{\"type\":\"player_input\",\"deep\":{}0{}}}",
            "[".repeat(40),
            "]".repeat(40)
        ),
    );
    e(&mut s, Rule::RtnpJsonLimit);
    let mut wrong = keys(3);
    wrong["up"] = "yes".into();
    s.client(
        bob,
        &msg("player_input", &[("client_id", 6.into()), ("keys", wrong)]),
    );
    e(&mut s, Rule::RtnpWrongType);
    s.client(bob, &msg("player_input", &[("client_id", 6.into())]));
    e(&mut s, Rule::RtnpMissingField);
    let mut negative = entity(1, 4);
    negative["networkId"] = (-1).into();
    s.server(bob, &snapshot(4, &[negative]));
    e(&mut s, Rule::RtnpRange);
    s.client(bob, &snapshot(0, &[]));
    e(&mut s, Rule::RtnpDirection);
    s.client(bob, &text(&[("type", 5.into()), ("client_id", 6.into())]));
    e(&mut s, Rule::RtnpTypeMissing);
    // bob falls silent for 31 s while the server keeps sending.
    s.capture.now_us += 31_000_000;
    s.server(bob, &snapshot(5, &[]));
    e(&mut s, Rule::RtnpClientSilent);
    s.server(bob, &snapshot(6, &[]));
    // The disconnect, its reason with a raw (unescaped) non-ASCII character.
    s.client(
        bob,
        &msg("disconnect", &[("client_id", 6.into())]).replace('}', ",\"reason\":\"à plus\"}"),
    );
    e(&mut s, Rule::RtnpJsonNonAscii);
    s.capture
}

/// `rtnp-raw-json`: two conforming conversations as raw JSON datagrams; no finding.
fn raw_sample() -> Capture {
    let mut s = Rtnp {
        capture: Capture::new(),
        wrap: false,
        server: addr(6, 1, SERVER_PORT),
    };
    conforming(&mut s, addr(6, 2, 41002), "ann", 0, 15);
    conforming(&mut s, addr(6, 3, 41003), "bob", 1, 15);
    s.capture
}

/// Frames carrying `bytes` from `from` to `to` over Ethernet and IPv4, in fragments of at most
/// [`MTU`] bytes when the IP datagram is larger.
fn fragments(from: SocketAddr, to: SocketAddr, bytes: &[u8], id: u16) -> io::Result<Vec<Vec<u8>>> {
    let whole = udp_frame(Link::Ethernet, from, to, bytes)?;
    const ETH: usize = 14;
    const IP: usize = 20;
    if whole.len() - ETH <= MTU {
        return Ok(vec![whole]);
    }
    let (IpAddr::V4(src), IpAddr::V4(dst)) = (from.ip(), to.ip()) else {
        return Err(invalid("fragments are written for IPv4 only"));
    };
    // The IP payload (UDP header and data), cut into pieces of a multiple of 8 bytes.
    let payload = &whole[ETH + IP..];
    let piece = (MTU - IP) / 8 * 8;
    let mut frames = Vec::new();
    for (i, chunk) in payload.chunks(piece).enumerate() {
        let mut h = Ipv4Header::new(
            chunk.len() as u16,
            64,
            IpNumber::UDP,
            src.octets(),
            dst.octets(),
        )
        .map_err(invalid)?;
        h.identification = id;
        h.dont_fragment = false;
        h.more_fragments = (i + 1) * piece < payload.len();
        h.fragment_offset = IpFragOffset::try_new((i * piece / 8) as u16).map_err(invalid)?;
        let mut frame = whole[..ETH].to_vec();
        h.write(&mut frame)?;
        frame.extend_from_slice(chunk);
        frames.push(frame);
    }
    Ok(frames)
}

/// `rtnp-fragmented`: snapshots of about 8 KiB in envelopes, each sent as six IPv4 fragments,
/// and one snapshot over the 8192-byte limit.
fn fragmented_sample() -> io::Result<(Capture, Vec<u8>)> {
    let server = addr(7, 1, SERVER_PORT);
    let client = addr(7, 2, 41002);
    let mut s = Rtnp {
        capture: Capture::new(),
        wrap: true,
        server,
    };
    s.client(
        client,
        &msg("connect_request", &[("player_name", "ann".into())]),
    );
    s.server(client, &msg("assign_id", &[("client_id", 3.into())]));
    // Entities until the envelope is just under 8 KiB.
    let fill = |epoch: u64, limit: usize| {
        let mut entities: Vec<Value> = Vec::new();
        loop {
            entities.push(entity(entities.len() as u32, epoch as u32));
            if envelope(&snapshot(epoch, &entities)).len() > limit {
                entities.pop();
                return snapshot(epoch, &entities);
            }
        }
    };
    for epoch in 0..4u64 {
        s.capture.now_us += TICK_US;
        s.client(
            client,
            &msg(
                "player_input",
                &[("client_id", 3.into()), ("keys", keys(epoch as u32))],
            ),
        );
        s.server(client, &fill(epoch, MAX_DATAGRAM));
    }
    s.capture.now_us += TICK_US;
    s.server(client, &fill(4, MAX_DATAGRAM + 1000));
    s.capture.expect(Rule::RtnpDatagramSize, 1);
    s.client(client, &msg("disconnect", &[("client_id", 3.into())]));
    let mut w = PcapWriter::new(Vec::new(), Link::Ethernet.linktype())?;
    for (i, r) in s.capture.records.iter().enumerate() {
        for frame in fragments(r.from, r.to, &r.bytes, 0x4000 + i as u16)? {
            w.record(r.ts_us, &frame)?;
        }
    }
    Ok((s.capture, w.finish()?))
}

/// Writes `rtnp-envelope`, `rtnp-raw-json` and `rtnp-fragmented` (`.pcap` and `.expected.txt`)
/// into `dir`.
pub fn write(dir: &Path) -> io::Result<()> {
    for (name, capture) in [
        ("rtnp-envelope", envelope_sample()),
        ("rtnp-raw-json", raw_sample()),
    ] {
        capture.write(dir, name, &capture.pcap()?)?;
    }
    let (capture, bytes) = fragmented_sample()?;
    capture.write(dir, "rtnp-fragmented", &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::rtnp::{parse, read_envelope};

    #[test]
    fn envelopes_read_back() {
        for text in [
            "",
            "PING",
            "{\"type\":\"assign_id\",\"client_id\":5}",
            &"x".repeat(8000),
        ] {
            let e = envelope(text);
            assert_eq!(e.len() % 8, 0);
            let range = read_envelope(&e).unwrap();
            assert_eq!(&e[range], text.as_bytes());
            let mut findings = vec![];
            assert_eq!(parse(&e, &mut findings).text, Some(text.as_bytes()));
            assert!(findings.is_empty());
        }
    }

    #[test]
    fn conforming_messages_put_type_first() {
        assert_eq!(
            msg("assign_id", &[("client_id", 5.into())]),
            "{\"type\":\"assign_id\",\"client_id\":5}"
        );
    }

    #[test]
    fn big_snapshots_are_fragmented() {
        let (capture, bytes) = fragmented_sample().unwrap();
        let sizes: Vec<usize> = capture.records.iter().map(|r| r.bytes.len()).collect();
        assert!(sizes[3] > 8000 && sizes[3] <= MAX_DATAGRAM, "{sizes:?}");
        assert!(sizes[10] > MAX_DATAGRAM, "{sizes:?}");
        let frames = fragments(
            capture.records[3].from,
            capture.records[3].to,
            &capture.records[3].bytes,
            1,
        )
        .unwrap();
        assert_eq!(frames.len(), 6);
        assert!(frames.iter().all(|f| f.len() <= 14 + MTU));
        assert!(bytes.len() > 5 * 8000);
    }
}
