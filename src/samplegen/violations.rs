//! One script per violation family. Each injects its violations inside otherwise clean traffic
//! and states, as it injects them, the findings they must produce.

use std::io;

use serde_json::{json, Value};

use super::clean::{add_scouts, farewell, filler, prelude, two_players};
use super::rtype::{Compression, RtypeBuilder};
use super::script::{invalid, Client, Script, XorShift, MASK_ENEMY};
use crate::proto::rtype::{COMPRESS_THRESHOLD, PACKET_CLIENT, PACKET_SERVER};
use crate::proto::Rule;

pub(super) fn violations_crc(s: &mut Script) -> io::Result<()> {
    let clients = two_players()?;
    let [a, b] = &clients;
    let (mut t, mut world) = prelude(s, &clients)?;
    add_scouts(&mut world, 4);
    t = filler(s, &clients, &mut world, t, 10)?;
    s.at(t);
    // CRC footers flipped; header and payload intact, so the messages still decode.
    let ping = s.payload("ping", &json!({"client_time": 1234}))?;
    let bytes = s
        .client_header(a, "ping")?
        .corrupt_crc()
        .build(&ping)
        .map_err(invalid)?;
    s.client_raw(a, &bytes)?;
    let input = s.payload(
        "input",
        &json!({"player_id": 2, "input_flags": 0x0010, "pos_x": 10.0, "pos_y": 20.0, "angle": 0.0}),
    )?;
    let bytes = s
        .client_header(b, "input")?
        .corrupt_crc()
        .build(&input)
        .map_err(invalid)?;
    s.client_raw(b, &bytes)?;
    let snapshot = s.payload("snapshot", &world.snapshot())?;
    let bytes = s
        .server_header("snapshot", t as u16)?
        .corrupt_crc()
        .build(&snapshot)
        .map_err(invalid)?;
    s.server_raw(a, &bytes)?;
    s.expect(Rule::RtypeCrc, 3);
    // Payload Len disagreeing with the datagram's size (never by 2, which would read as a
    // 15-byte header).
    s.at(t + 1);
    let bytes = s
        .client_header(a, "ping")?
        .payload_len(ping.len() as u16 + 5)
        .build(&ping)
        .map_err(invalid)?;
    s.client_raw(a, &bytes)?;
    let text = s.payload("broadcast", &json!({"text": "Server restarting soon"}))?;
    let bytes = s
        .server_header("broadcast", 0)?
        .payload_len(text.len() as u16 - 3)
        .build(&text)
        .map_err(invalid)?;
    s.server_raw(b, &bytes)?;
    s.expect(Rule::RtypeLength, 2);
    // A datagram too short for header and footer: the first 12 bytes of a ping.
    s.at(t + 2);
    let bytes = s.client_header(a, "ping")?.build(&ping).map_err(invalid)?;
    s.client_raw(a, &bytes[..12])?;
    s.expect(Rule::RtypeShort, 1);
    // Versions other than 1.
    s.at(t + 3);
    let seq = s.client(a, "ping", json!({"client_time": 2000}))?;
    let pong = s.payload("pong", &json!({"client_time": 2000}))?;
    s.server_raw(
        a,
        &s.server_header("pong", seq)?
            .version(2)
            .build(&pong)
            .map_err(invalid)?,
    )?;
    let bytes = s
        .client_header(b, "input")?
        .version(0)
        .build(&input)
        .map_err(invalid)?;
    s.client_raw(b, &bytes)?;
    s.expect(Rule::RtypeVersion, 2);
    // Packet types other than 0x01 and 0x02.
    s.at(t + 4);
    let bytes = s
        .client_header(a, "ping")?
        .packet_type(0x03)
        .build(&ping)
        .map_err(invalid)?;
    s.client_raw(a, &bytes)?;
    s.server_raw(
        a,
        &s.server_header("pong", 0)?
            .packet_type(0x00)
            .build(&pong)
            .map_err(invalid)?,
    )?;
    s.expect(Rule::RtypePacketType, 2);
    t = filler(s, &clients, &mut world, t + 5, 5)?;
    farewell(s, &clients, t)
}

/// A header forced to compress `payload`; errors unless the result is as `smaller` says.
fn forced(header: RtypeBuilder, payload: &[u8], smaller: bool) -> io::Result<Vec<u8>> {
    let packed = lz4_flex::block::compress(payload);
    if (packed.len() < payload.len()) != smaller {
        return Err(invalid(
            "the sample payload does not compress as the scenario needs",
        ));
    }
    header
        .compression(Compression::Force)
        .build(payload)
        .map_err(invalid)
}

pub(super) fn violations_compression(s: &mut Script) -> io::Result<()> {
    let clients = [Client::numbered(0)?];
    let [a] = &clients;
    let (mut t, mut world) = prelude(s, &clients)?;
    add_scouts(&mut world, 5);
    t = filler(s, &clients, &mut world, t, 5)?;
    s.at(t);
    // 51 bytes, compressed although 64 or less (and the compressed form is smaller).
    let short = s.payload("broadcast", &json!({"text": "a".repeat(50)}))?;
    if short.len() > COMPRESS_THRESHOLD {
        return Err(invalid("the short payload is over the threshold"));
    }
    s.server_raw(a, &forced(s.server_header("broadcast", 0)?, &short, true)?)?;
    s.expect(Rule::RtypeCompressSmall, 1);
    // Over 64 bytes of text LZ4 cannot shrink, compressed anyway.
    let mut rng = XorShift::new(0x5EED);
    let noise: String = (0..100)
        .map(|_| char::from(b'!' + rng.below(94) as u8))
        .collect();
    let noisy = s.payload("broadcast", &json!({"text": noise}))?;
    s.server_raw(a, &forced(s.server_header("broadcast", 0)?, &noisy, false)?)?;
    s.expect(Rule::RtypeCompressNotSmaller, 1);
    // Orig. Size set on an uncompressed snapshot.
    s.at(t + 1);
    let snapshot = s.payload("snapshot", &world.snapshot())?;
    let header = s
        .server_header("snapshot", (t + 1) as u16)?
        .compression(Compression::Never);
    s.server_raw(
        a,
        &header
            .orig_size(snapshot.len() as u16)
            .build(&snapshot)
            .map_err(invalid)?,
    )?;
    s.expect(Rule::RtypeOrigSizeSet, 1);
    // Compression bit set on bytes that are not LZ4: a literal run longer than the input.
    s.at(t + 2);
    let garbage = [0xF0, 0xFF, 0xFF, 0xFF, 0x12, 0x34];
    if lz4_flex::block::decompress(&garbage, 1000).is_ok() {
        return Err(invalid("the LZ4 garbage decompresses"));
    }
    let header = s
        .server_header("snapshot", (t + 2) as u16)?
        .compression(Compression::Raw)
        .orig_size(120);
    s.server_raw(a, &header.build(&garbage).map_err(invalid)?)?;
    s.expect(Rule::RtypeLz4, 1);
    // A compressed snapshot whose Orig. Size is 7 bytes more than the truth.
    s.at(t + 3);
    if snapshot.len() <= COMPRESS_THRESHOLD {
        return Err(invalid("the snapshot is too small to be compressed"));
    }
    let header = s
        .server_header("snapshot", (t + 3) as u16)?
        .orig_size(snapshot.len() as u16 + 7);
    s.server_raw(a, &forced(header, &snapshot, true)?)?;
    s.expect(Rule::RtypeOrigSize, 1);
    t = filler(s, &clients, &mut world, t + 4, 5)?;
    farewell(s, &clients, t)
}

pub(super) fn violations_messages(s: &mut Script) -> io::Result<()> {
    let clients = two_players()?;
    let [a, b] = &clients;
    let (mut t, mut world) = prelude(s, &clients)?;
    t = filler(s, &clients, &mut world, t, 5)?;
    s.at(t);
    // A message type no document defines.
    s.server_raw(
        a,
        &RtypeBuilder::new(PACKET_SERVER, 0x40)
            .tick(t)
            .build(&[1, 2, 3])
            .map_err(invalid)?,
    )?;
    s.expect(Rule::RtypeUnknownType, 1);
    // A server message type sent by a client, with the client's packet type.
    let header = s.client_header(a, "game_start")?.packet_type(PACKET_CLIENT);
    s.client_raw(a, &header.build(&[]).map_err(invalid)?)?;
    s.expect(Rule::RtypeDirection, 1);
    // Text whose length runs past the payload's end.
    s.at(t + 1);
    let text = s.payload("broadcast", &json!({"text": "Welcome to stage 1"}))?;
    s.server_raw(
        a,
        &s.server_header("broadcast", 0)?
            .build(&text[..text.len() - 6])
            .map_err(invalid)?,
    )?;
    s.expect(Rule::RtypeTruncated, 1);
    // Two bytes after the last field.
    let mut text = s.payload("broadcast", &json!({"text": "hi"}))?;
    text.extend([0xDE, 0xAD]);
    s.server_raw(
        a,
        &s.server_header("broadcast", 0)?
            .build(&text)
            .map_err(invalid)?,
    )?;
    s.expect(Rule::RtypeTrailing, 1);
    // A fixed-size message (CLIENT_PING, 4 bytes) with 6.
    let mut ping = s.payload("ping", &json!({"client_time": 777}))?;
    ping.extend([0, 0]);
    let header = s.client_header(b, "ping")?;
    s.client_raw(b, &header.build(&ping).map_err(invalid)?)?;
    s.expect(Rule::RtypeSize, 1);
    // CLIENT_INPUT with a NaN position and an infinite angle; one with unused flag bits.
    s.at(t + 2);
    s.client(
        a,
        "input",
        json!({"player_id": 1, "input_flags": 0x0001, "pos_x": "NaN", "pos_y": 5.0, "angle": 0.0}),
    )?;
    s.client(
        b,
        "input",
        json!({"player_id": 2, "input_flags": 0x0002, "pos_x": 1.0, "pos_y": 5.0, "angle": "inf"}),
    )?;
    s.expect(Rule::RtypeInputNonFinite, 2);
    s.client(
        a,
        "input",
        json!({"player_id": 1, "input_flags": 0x0410, "pos_x": 1.0, "pos_y": 5.0, "angle": 0.0}),
    )?;
    s.expect(Rule::RtypeInputUnusedBits, 1);
    // Text that is not UTF-8.
    s.at(t + 3);
    s.broadcast(
        &[*a],
        "broadcast",
        0,
        json!({"text": [0x48, 0x69, 0xFF, 0xFE]}),
    )?;
    s.expect(Rule::RtypeUtf8, 1);
    // The reserved LevelTransition, an unknown LevelEvent type (with two bytes the document
    // cannot explain), and a scroll curve whose keyframes go back in time.
    s.server(a, "leveltransition", 0, json!({}))?;
    s.expect(Rule::RtypeLevelTransition, 1);
    let mut event = s.payload("levelevent", &json!({"event_type": 9}))?;
    event.extend([0x01, 0x02]);
    s.server_raw(
        a,
        &s.server_header("levelevent", 0)?
            .build(&event)
            .map_err(invalid)?,
    )?;
    s.expect(Rule::RtypeUnknownEvent, 1);
    let keyframes = [(0.0, 1.0), (3.0, 2.0), (1.5, 0.5), (4.0, 1.0)]
        .map(|(time, speed)| json!({"time": time, "speed_x": speed}));
    s.server(
        a,
        "levelevent",
        0,
        json!({"event_type": 1, "set_scroll": {"mode": 2, "speed_x": 1.0, "keyframes": keyframes}}),
    )?;
    s.expect(Rule::RtypeUnsortedKeyframes, 1);
    t = filler(s, &clients, &mut world, t + 4, 5)?;
    // Player 2 is kicked with a reason code the document does not reserve; player 1 leaves.
    s.at(t);
    s.server(b, "kick", 0, json!({"reason": 0x05}))?;
    s.expect(Rule::RtypeReason, 1);
    farewell(s, &[*a], t + 1)
}

pub(super) fn violations_snapshot(s: &mut Script) -> io::Result<()> {
    let clients = [Client::numbered(0)?];
    let [a] = &clients;
    let (mut t, mut world) = prelude(s, &clients)?;
    add_scouts(&mut world, 3);
    t = filler(s, &clients, &mut world, t, 5)?;
    // Each bad snapshot: the ship, then a scout whose mask sets a bit of unknown width, with the
    // bytes a sender that knew a width might have put there, then another scout.
    let bad_bits: [(u16, &str, Value, Rule); 4] = [
        (7, "bit7", json!([0x00, 0x01]), Rule::RtypeReservedBit),
        (8, "bit8", json!([0x03]), Rule::RtypeReservedBit),
        (
            10,
            "bit10",
            json!([0x00, 0x00, 0x30, 0x39]),
            Rule::RtypeUndefinedBit,
        ),
        (
            12,
            "bit12",
            json!([0x00, 0x00, 0x00, 0x2A]),
            Rule::RtypeUndefinedBit,
        ),
    ];
    for (k, (bit, key, bytes, rule)) in bad_bits.into_iter().enumerate() {
        s.at(t + k as u32);
        world.step();
        let mut snapshot = world.snapshot();
        let scout = &mut snapshot["entities"][1];
        scout["update_mask"] = json!(MASK_ENEMY | 1 << bit);
        scout[key] = bytes;
        s.server(a, "snapshot", (t + k as u32) as u16, snapshot)?;
        s.expect(rule, 1);
    }
    t = filler(s, &clients, &mut world, t + 4, 5)?;
    farewell(s, &clients, t)
}

/// The (totalChunks, chunkIndex) of one tick's chunks, and the rule they break.
type ChunkSet = (&'static [(u16, u16)], Option<Rule>);

pub(super) fn violations_chunks(s: &mut Script) -> io::Result<()> {
    let clients = [Client::numbered(0)?];
    let [a] = &clients;
    let (mut t, mut world) = prelude(s, &clients)?;
    add_scouts(&mut world, 5);
    t = filler(s, &clients, &mut world, t, 3)?;
    // (totalChunks, chunkIndex) sent for one tick each, and what they break.
    let sets: [ChunkSet; 7] = [
        (&[(3, 0), (3, 1), (3, 2)], None),
        (
            &[(2, 0), (3, 1), (2, 1)],
            Some(Rule::RtypeChunkTotalMismatch),
        ),
        (
            &[(3, 0), (3, 0), (3, 1), (3, 2)],
            Some(Rule::RtypeChunkDuplicate),
        ),
        (&[(2, 0), (2, 2), (2, 1)], Some(Rule::RtypeChunkIndex)),
        (&[(0, 0)], Some(Rule::RtypeChunkTotalZero)),
        (&[(3, 0), (3, 2)], Some(Rule::RtypeChunkMissing)),
        (&[(1, 0)], None),
    ];
    for (k, (chunks, rule)) in sets.into_iter().enumerate() {
        let tick = t + 10 * k as u32;
        s.at(tick);
        for &(total, index) in chunks {
            let mut chunk = world
                .chunks(total.max(1))
                .into_iter()
                .nth(usize::from(index))
                .unwrap_or(json!({"entities": []}));
            chunk["total_chunks"] = json!(total);
            chunk["chunk_index"] = json!(index);
            s.server(
                a,
                "snapshot_chunk",
                (tick as u16).wrapping_add(index),
                chunk,
            )?;
        }
        if let Some(rule) = rule {
            s.expect(rule, 1);
        }
        s.at(tick + 1);
        s.server(a, "snapshot", (tick + 1) as u16, world.snapshot())?;
    }
    t = filler(s, &clients, &mut world, t + 80, 3)?;
    farewell(s, &clients, t)
}
