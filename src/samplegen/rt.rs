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

/// `rt-big-endian`: the document's dialect. Conversation 1 (ann) uses every packet type of the
/// document, each reliable one acknowledged, and produces no finding; a rejected client (eve)
/// likewise; conversation 2 (bob) breaks one rule per datagram.
fn big_endian() -> io::Result<Capture> {
    let mut rt = Rt::new(Endian::Big, addr(3, 1, 4242));
    let mut server = Peer {
        addr: rt.server,
        sequence: 0,
    };
    let mut ann = Peer {
        addr: addr(3, 2, 41002),
        sequence: 0,
    };
    let s = rt.server;
    let (ann_id, ann_player) = (7, 1);

    rt.send(
        &mut ann,
        s,
        desc::CLIENT_CONNECT,
        0,
        json!({"protocol_version": 1, "player_name": "ann", "client_id": ann_id}),
    )?;
    rt.reliable(&mut server, &mut ann, ann_id, desc::SERVER_ACCEPT,
        json!({"assigned_player_id": ann_player, "max_players": 4, "game_instance_id": 99, "server_tickrate": 60}))?;
    rt.reliable(&mut server, &mut ann, ann_id, 0x60, json!({"game_instance_id": 99, "player_count": 2,
        "player_id_1": 1, "player_id_2": 2, "player_id_3": 0, "player_id_4": 0, "level_id": 1, "difficulty": 2}))?;
    rt.reliable(
        &mut server,
        &mut ann,
        ann_id,
        0x63,
        json!({"level_id": 1, "level_name": "Bydo Empire", "estimated_duration": 300}),
    )?;
    rt.reliable(&mut server, &mut ann, ann_id, 0x21, json!({"entity_id": 1, "entity_type": 1, "position_x": 100,
        "position_y": 200, "mob_variant": 0, "initial_health": 100, "initial_velocity_x": 0, "initial_velocity_y": 0, "is_playable": 1}))?;
    rt.reliable(&mut server, &mut ann, ann_id, 0x21, json!({"entity_id": 50, "entity_type": 2, "position_x": 600,
        "position_y": 240, "mob_variant": 3, "initial_health": 20, "initial_velocity_x": 65534, "initial_velocity_y": 0, "is_playable": 0}))?;
    rt.send(&mut ann, s, 0x05, 0, json!({"player_id": ann_player}))?;
    let t = rt.capture.millis();
    rt.send(
        &mut ann,
        s,
        0x71,
        0,
        json!({"client_timestamp": t, "client_id": ann_id}),
    )?;
    rt.send(
        &mut server,
        ann.addr,
        0x72,
        0,
        json!({"client_timestamp": t, "server_timestamp": t + 1}),
    )?;
    for tick in 1..=12u32 {
        rt.capture.now_us = T0_US + 100_000 + u64::from(tick) * TICK_US;
        let ti = i64::from(tick);
        rt.send(
            &mut ann,
            s,
            desc::PLAYER_INPUT,
            0,
            json!({"player_id": ann_player, "input_state": input_keys(tick),
            "aim_direction_x": 1000, "aim_direction_y": 0, "padding": [0, 0]}),
        )?;
        rt.send(
            &mut server,
            ann.addr,
            0x24,
            0,
            json!({"world_tick": tick, "entities": [transform(1, ti), transform(50, -ti)]}),
        )?;
        if tick % 2 == 0 {
            rt.send(&mut server, ann.addr, 0x25, 0, json!({"world_tick": tick, "entities": [
                {"entity_id": 50, "vel_x": -3, "vel_y": 1, "acceleration_x": 0, "acceleration_y": -1}]}))?;
        }
        if tick % 3 == 0 {
            rt.send(
                &mut server,
                ann.addr,
                0x26,
                0,
                json!({"world_tick": tick, "entities": [health(1), health(50)]}),
            )?;
            rt.send(
                &mut server,
                ann.addr,
                0x2C,
                0,
                json!({"world_tick": tick, "base_tick": tick - 1, "entities": [transform(1, ti)]}),
            )?;
            rt.send(
                &mut server,
                ann.addr,
                0x2D,
                0,
                json!({"world_tick": tick, "base_tick": tick - 3, "entities": [health(50)]}),
            )?;
        }
        if tick % 4 == 0 {
            rt.send(&mut server, ann.addr, 0x27, 0, json!({"world_tick": tick, "entities": [
                {"entity_id": 1, "weapon_type": 1, "ammo_count": 255, "cooldown_remaining": 120, "power_level": 2}]}))?;
            rt.send(&mut server, ann.addr, 0x28, 0, json!({"world_tick": tick, "entities": [
                {"entity_id": 50, "ai_state": 1, "behavior_type": 5, "target_entity_id": 1, "state_timer": 400}]}))?;
            rt.send(
                &mut server,
                ann.addr,
                0x29,
                0,
                json!({"world_tick": tick, "entities": [
                {"entity_id": 1, "animation_data": [1, 2, 3, 4, 5, 6, 7]}]}),
            )?;
        }
    }
    rt.send(
        &mut server,
        ann.addr,
        0x44,
        0,
        json!({"shooter_id": 1, "projectile_id": 60, "origin_x": 140, "origin_y": 190,
        "direction_x": 1000, "direction_y": 0, "weapon_type": 1}),
    )?;
    rt.reliable(&mut server, &mut ann, ann_id, 0x2A, json!({"entity_id": 1, "component_type": 6,
        "force": {"data_size": 7, "parent_ship_id": 1, "attachment_point": 0, "force_level": 1, "charge_state": 0}}))?;
    rt.reliable(&mut server, &mut ann, ann_id, 0x2E, json!({"entity_id": 50, "entity_type": 2, "components": [
        {"component_type": 1, "transform": {"data_size": 8, "pos_x": 560, "pos_y": 236, "rotation": 0, "scale": 1000}},
        {"component_type": 3, "health": {"data_size": 4, "current_health": 20, "max_health": 20, "current_shield": 0, "max_shield": 0}},
    ]}))?;
    rt.reliable(
        &mut server,
        &mut ann,
        ann_id,
        0x40,
        json!({"player_id": ann_player, "attacker_id": 50, "damage": 10,
        "remaining_health": 80, "remaining_shield": 0, "hit_pos_x": 150, "hit_pos_y": 190}),
    )?;
    rt.send(
        &mut server,
        ann.addr,
        0x42,
        0,
        json!({"player_id": ann_player, "new_score": 1200, "score_delta": -100, "reason": 5}),
    )?;
    rt.reliable(
        &mut server,
        &mut ann,
        ann_id,
        0x43,
        json!({"player_id": ann_player, "powerup_id": 70, "powerup_type": 2, "duration": 0}),
    )?;
    rt.send(
        &mut server,
        ann.addr,
        0x50,
        0,
        json!({"effect_type": 3, "pos_x": 560, "pos_y": 236, "duration_ms": 500,
        "scale": 150, "color_tint_r": 255, "color_tint_g": 128, "color_tint_b": 0}),
    )?;
    rt.send(
        &mut server,
        ann.addr,
        0x51,
        0,
        json!({"effect_type": 1, "pos_x": 560, "pos_y": 236, "volume": 200, "pitch": 100}),
    )?;
    rt.send(&mut server, ann.addr, 0x52, 0, json!({"particle_system_id": 4, "pos_x": 560, "pos_y": 236, "velocity_x": -2,
        "velocity_y": 3, "particle_count": 40, "lifetime_ms": 800, "color_start_r": 255, "color_start_g": 255,
        "color_start_b": 0, "color_end_r": 128, "color_end_g": 0, "color_end_b": 0}))?;
    rt.send(
        &mut server,
        ann.addr,
        0x64,
        0,
        json!({"force_entity_id": 80, "parent_ship_id": 1, "attachment_point": 1,
        "power_level": 2, "charge_percentage": 75, "is_firing": 1}),
    )?;
    rt.send(&mut server, ann.addr, 0x65, 0, json!({"entity_id": 50, "current_state": 2, "behavior_type": 10,
        "target_entity_id": 1, "waypoint_x": 150, "waypoint_y": 190, "state_timer": 250, "padding": [0, 0]}))?;
    rt.reliable(
        &mut server,
        &mut ann,
        ann_id,
        0x2B,
        json!({"entity_id": 1, "component_type": 6}),
    )?;
    rt.reliable(&mut server, &mut ann, ann_id, 0x22, json!({"entity_id": 50, "destroy_reason": 0, "final_position_x": 560, "final_position_y": 236}))?;
    rt.reliable(
        &mut server,
        &mut ann,
        ann_id,
        0x41,
        json!({"player_id": ann_player, "killer_id": 51, "score_before_death": 1200,
        "death_pos_x": 300, "death_pos_y": 100}),
    )?;
    rt.reliable(&mut server, &mut ann, ann_id, 0x62, json!({"completed_level": 1, "next_level": 255, "bonus_score": 5000, "completion_time": 95}))?;
    rt.reliable(
        &mut server,
        &mut ann,
        ann_id,
        0x61,
        json!({"end_reason": 1, "final_score_1": 6200, "final_score_2": 3100,
        "final_score_3": 0, "final_score_4": 0, "winner_id": 1, "play_time": 95}),
    )?;
    let bye = rt.send(
        &mut ann,
        s,
        desc::CLIENT_DISCONNECT,
        FLAG_RELIABLE,
        json!({"client_id": ann_id, "reason": 0}),
    )?;
    rt.ack(&mut server, ann.addr, bye, ann_id)?;

    // A client turned away, acknowledging the rejection.
    let mut eve = Peer {
        addr: addr(3, 4, 41004),
        sequence: 0,
    };
    rt.send(
        &mut eve,
        s,
        desc::CLIENT_CONNECT,
        0,
        json!({"protocol_version": 1, "player_name": "eve", "client_id": 9}),
    )?;
    rt.reliable(
        &mut server,
        &mut eve,
        9,
        desc::SERVER_REJECT,
        json!({"reject_code": 0, "reason_message": "server full"}),
    )?;

    // bob: one broken rule per datagram.
    let mut bob = Peer {
        addr: addr(3, 3, 41003),
        sequence: 0,
    };
    let bob_id = 8;
    rt.send(
        &mut bob,
        s,
        desc::CLIENT_CONNECT,
        0,
        json!({"protocol_version": 1, "player_name": [0x62, 0xFF, 0x62], "client_id": bob_id}),
    )?;
    rt.capture.expect(Rule::RtUtf8, 1);
    rt.reliable(&mut server, &mut bob, bob_id, desc::SERVER_ACCEPT,
        json!({"assigned_player_id": 2, "max_players": 4, "game_instance_id": 99, "server_tickrate": 60}))?;
    rt.send(
        &mut server,
        bob.addr,
        0x40,
        0,
        json!({"player_id": 2, "attacker_id": 50, "damage": 5,
        "remaining_health": 95, "remaining_shield": 0, "hit_pos_x": 10, "hit_pos_y": 20}),
    )?;
    rt.capture.expect(Rule::RtReliableFlagMissing, 1);
    rt.raw(&mut server, bob.addr, 0x30, 0, &[1, 2, 3]);
    rt.capture.expect(Rule::RtUnknownType, 1);
    rt.raw(&mut server, bob.addr, 0x00, 0, &[]);
    rt.capture.expect(Rule::RtPacketType, 1);
    let fire = rt.payload(
        message(0x44)?.body,
        &json!({"shooter_id": 2, "projectile_id": 61, "origin_x": 0, "origin_y": 0,
        "direction_x": 0, "direction_y": 1000, "weapon_type": 0}),
    )?;
    rt.raw(&mut server, bob.addr, 0x44, 0, &fire[..10]);
    rt.capture.expect(Rule::RtSize, 1);
    let mut snapshot = rt.payload(
        message(0x26)?.body,
        &json!({"world_tick": 5, "entities": [health(2)]}),
    )?;
    snapshot.extend([0xEE; 3]);
    rt.raw(&mut server, bob.addr, 0x26, 0, &snapshot);
    rt.capture.expect(Rule::RtTrailing, 1);
    // A spawn bob never acknowledges.
    rt.send(&mut server, bob.addr, 0x21, FLAG_RELIABLE, json!({"entity_id": 2, "entity_type": 1, "position_x": 100,
        "position_y": 300, "mob_variant": 0, "initial_health": 100, "initial_velocity_x": 0, "initial_velocity_y": 0, "is_playable": 1}))?;
    rt.capture.expect(Rule::RtUnacknowledged, 1);
    rt.send(
        &mut server,
        bob.addr,
        0x24,
        0,
        json!({"world_tick": 8, "entity_count": 2, "entities": [transform(2, 8)]}),
    )?;
    rt.capture.expect(Rule::RtTruncated, 1);
    rt.send(
        &mut server,
        bob.addr,
        0x24,
        0x20,
        json!({"world_tick": 6, "entities": [transform(2, 6)]}),
    )?;
    rt.capture.expect(Rule::RtReservedFlags, 1);
    rt.raw(
        &mut server,
        bob.addr,
        0x24,
        FLAG_COMPRESSED,
        &[0x1F, 0x8B, 0x08, 0x00],
    );
    rt.capture.expect(Rule::RtOpaque, 1);
    let crowd: Vec<Value> = (0..100).map(|i| transform(100 + i, i64::from(i))).collect();
    rt.send(
        &mut server,
        bob.addr,
        0x24,
        0,
        json!({"world_tick": 7, "entities": crowd}),
    )?;
    rt.capture.expect(Rule::RtDatagramSize, 1);
    rt.send(
        &mut server,
        bob.addr,
        desc::CLIENT_CONNECT,
        0,
        json!({"protocol_version": 1, "player_name": "server", "client_id": 0}),
    )?;
    rt.capture.expect(Rule::RtDirection, 1);
    rt.reliable(
        &mut server,
        &mut bob,
        bob_id,
        0x2A,
        json!({"entity_id": 2, "component_type": 8, "data": [3, 1, 2, 3]}),
    )?;
    rt.capture.expect(Rule::RtUnknownComponent, 1);
    rt.send_variant(
        &mut bob,
        s,
        desc::PLAYER_INPUT,
        0,
        0,
        json!({"player_id": 2, "input_state": 1, "aim_direction_x": -1000, "aim_direction_y": 0}),
    )?;
    let short = header(Endian::Big, desc::PLAYER_INPUT, 0, 0, 0);
    rt.capture.send(bob.addr, s, short[..5].to_vec());
    rt.capture.expect(Rule::RtShort, 1);
    rt.send(
        &mut bob,
        s,
        desc::CLIENT_DISCONNECT,
        0,
        json!({"client_id": bob_id, "reason": 3}),
    )?;
    rt.capture.expect(Rule::RtDisconnectUnreliable, 1);
    Ok(rt.capture)
}

/// `rt-little-endian`: the real server's dialect (spec-notes B): little-endian, CLIENT_CONNECT
/// with a header copy, PLAYER_IS_READY / PLAYER_NOT_READY, 10-byte inputs relayed to the other
/// client, snapshots without world_tick (the real weapon entries), ACK and PING without
/// client_id, and reliable packets nobody acknowledges (but one).
fn little_endian() -> io::Result<Capture> {
    let mut rt = Rt::new(Endian::Little, addr(4, 1, 4242));
    let s = rt.server;
    let mut server = Peer {
        addr: s,
        sequence: 0,
    };
    let mut clients = [
        Peer {
            addr: addr(4, 2, 41002),
            sequence: 0,
        },
        Peer {
            addr: addr(4, 3, 41003),
            sequence: 0,
        },
    ];
    let names = ["alice", "bob"];
    rt.capture.expect(Rule::RtByteOrder, 2);
    rt.capture.expect(Rule::RtUnacknowledged, 2);
    for (i, c) in clients.iter_mut().enumerate() {
        // The header copy is the same header again.
        let (seq, ts) = (c.sequence + 1, rt.capture.millis());
        rt.send_variant(c, s, desc::CLIENT_CONNECT, 0, 0, json!({"magic": u16::from_be_bytes(desc::MAGIC), "packet_type": desc::CLIENT_CONNECT,
            "flags": 0, "sequence_number": seq, "timestamp": ts, "protocol_version": 1, "player_name": names[i], "client_id": i}))?;
        let accept = rt.send(&mut server, c.addr, desc::SERVER_ACCEPT, FLAG_RELIABLE,
            json!({"assigned_player_id": i, "max_players": 2, "game_instance_id": 1, "server_tickrate": 60}))?;
        if i == 0 {
            // The one acknowledgment, without client_id.
            let value =
                json!({"acked_sequence": accept, "received_timestamp": rt.capture.millis()});
            rt.send_variant(c, s, desc::ACKNOWLEDGMENT, 0, 0, value)?;
        }
    }
    for i in 0..2usize {
        for (j, c) in clients.iter().enumerate() {
            rt.send(&mut server, c.addr, 0x21, FLAG_RELIABLE, json!({"entity_id": 10000 + j, "entity_type": 1,
                "position_x": 200, "position_y": 200 + 200 * j, "mob_variant": 0, "initial_health": 100,
                "initial_velocity_x": 0, "initial_velocity_y": 0, "is_playable": u8::from(i == j)}))?;
        }
    }
    for (i, c) in clients.iter_mut().enumerate() {
        rt.send(c, s, 0x11, FLAG_RELIABLE, json!({"player_id": i}))?;
        rt.capture.expect(Rule::RtUndocumentedType, 1);
    }
    rt.send(
        &mut clients[1],
        s,
        0x12,
        FLAG_RELIABLE,
        json!({"player_id": 1}),
    )?;
    rt.send(
        &mut clients[1],
        s,
        0x11,
        FLAG_RELIABLE,
        json!({"player_id": 1}),
    )?;
    rt.capture.expect(Rule::RtUndocumentedType, 2);
    for c in &clients {
        rt.send(
            &mut server,
            c.addr,
            0x63,
            FLAG_RELIABLE,
            json!({"level_id": 1, "level_name": "background_level1", "estimated_duration": 120}),
        )?;
    }
    let weapon = |id: usize| json!({"entity_id": 10000 + id, "fire_rate_ms": 200, "damage": 10, "projectile_type": 0, "ammo": 255});
    for tick in 1..=20u32 {
        rt.capture.now_us = T0_US + 200_000 + u64::from(tick) * TICK_US;
        for (i, c) in clients.iter_mut().enumerate() {
            let input = json!({"player_id": i, "input_state": input_keys(tick + i as u32), "aim_direction_x": -5 * i as i64, "aim_direction_y": 7});
            rt.send_variant(c, s, desc::PLAYER_INPUT, 0, FLAG_RELIABLE, input.clone())?;
            // Relayed to the other client.
            let other = clients_addr(i);
            rt.send_variant(
                &mut server,
                other,
                desc::PLAYER_INPUT,
                0,
                FLAG_RELIABLE,
                input,
            )?;
        }
        for c in &clients {
            // Snapshots carry the tick in the header's sequence number.
            server.sequence = tick - 1;
            let entities: Vec<Value> = (0..2)
                .map(|j| transform(10000 + j, i64::from(tick)))
                .collect();
            rt.send_variant(
                &mut server,
                c.addr,
                0x24,
                0,
                0,
                json!({"entities": entities}),
            )?;
            if tick % 2 == 0 {
                server.sequence = tick - 1;
                rt.send_variant(
                    &mut server,
                    c.addr,
                    0x26,
                    0,
                    0,
                    json!({"entities": [health(10000), health(10001)]}),
                )?;
                server.sequence = tick - 1;
                rt.send_variant(
                    &mut server,
                    c.addr,
                    0x27,
                    0,
                    0,
                    json!({"entities": [weapon(0), weapon(1)]}),
                )?;
            }
        }
        if tick % 5 == 0 {
            for c in &clients {
                rt.send(&mut server, c.addr, 0x44, FLAG_RELIABLE, json!({"shooter_id": 10000, "projectile_id": 10002 + tick,
                    "origin_x": 200, "origin_y": 200, "direction_x": 1000, "direction_y": 0, "weapon_type": 0}))?;
            }
        }
    }
    let t = rt.capture.millis();
    rt.send_variant(
        &mut clients[0],
        s,
        0x71,
        0,
        0,
        json!({"client_timestamp": t}),
    )?;
    rt.send(
        &mut server,
        clients[0].addr,
        0x72,
        0,
        json!({"client_timestamp": t, "server_timestamp": t + 2}),
    )?;
    for (i, c) in clients.iter_mut().enumerate() {
        rt.send(
            c,
            s,
            desc::CLIENT_DISCONNECT,
            FLAG_RELIABLE,
            json!({"client_id": i, "reason": 0}),
        )?;
    }
    Ok(rt.capture)
}

/// The address of the client other than number `i` in [`little_endian`].
fn clients_addr(i: usize) -> SocketAddr {
    if i == 0 {
        addr(4, 3, 41003)
    } else {
        addr(4, 2, 41002)
    }
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
