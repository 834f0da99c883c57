//! The `rt-little-endian` sample: the real server's dialect (spec-notes B), two clients in one
//! game.

use super::*;

/// `rt-little-endian`: the real server's dialect (spec-notes B): little-endian, CLIENT_CONNECT
/// with a header copy, PLAYER_IS_READY / PLAYER_NOT_READY, 10-byte inputs relayed to the other
/// client, snapshots without world_tick (the real weapon entries), ACK and PING without
/// client_id, and reliable packets nobody acknowledges (but one).
pub(super) fn little_endian() -> io::Result<Capture> {
    let mut rt = Rt::new(Endian::Little, addr(4, 1, 4242));
    let s = rt.server;
    let mut server = Peer::at(s);
    let mut clients = [Peer::at(addr(4, 2, 41002)), Peer::at(addr(4, 3, 41003))];
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
