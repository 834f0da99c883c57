//! The `rt-big-endian` sample: the document's dialect, with one conversation that uses every
//! packet type and produces no finding, a rejected client, and one that breaks one rule per
//! datagram.

use super::*;

/// `rt-big-endian`: the document's dialect. Conversation 1 (ann) uses every packet type of the
/// document, each reliable one acknowledged, and produces no finding; a rejected client (eve)
/// likewise; conversation 2 (bob) breaks one rule per datagram.
pub(super) fn big_endian() -> io::Result<Capture> {
    let mut rt = Rt::new(Endian::Big, addr(3, 1, 4242));
    let mut server = Peer::at(rt.server);
    ann(&mut rt, &mut server)?;
    eve(&mut rt, &mut server)?;
    bob(&mut rt, &mut server)?;
    Ok(rt.capture)
}

/// Conversation 1: every packet type of the document, each reliable one acknowledged; no finding.
fn ann(rt: &mut Rt, server: &mut Peer) -> io::Result<()> {
    let mut ann = Peer::at(addr(3, 2, 41002));
    let s = rt.server;
    let (ann_id, ann_player) = (7, 1);

    rt.send(
        &mut ann,
        s,
        desc::CLIENT_CONNECT,
        0,
        json!({"protocol_version": 1, "player_name": "ann", "client_id": ann_id}),
    )?;
    rt.reliable(server, &mut ann, ann_id, desc::SERVER_ACCEPT,
        json!({"assigned_player_id": ann_player, "max_players": 4, "game_instance_id": 99, "server_tickrate": 60}))?;
    rt.reliable(server, &mut ann, ann_id, 0x60, json!({"game_instance_id": 99, "player_count": 2,
        "player_id_1": 1, "player_id_2": 2, "player_id_3": 0, "player_id_4": 0, "level_id": 1, "difficulty": 2}))?;
    rt.reliable(
        server,
        &mut ann,
        ann_id,
        0x63,
        json!({"level_id": 1, "level_name": "Bydo Empire", "estimated_duration": 300}),
    )?;
    rt.reliable(server, &mut ann, ann_id, 0x21, json!({"entity_id": 1, "entity_type": 1, "position_x": 100,
        "position_y": 200, "mob_variant": 0, "initial_health": 100, "initial_velocity_x": 0, "initial_velocity_y": 0, "is_playable": 1}))?;
    rt.reliable(server, &mut ann, ann_id, 0x21, json!({"entity_id": 50, "entity_type": 2, "position_x": 600,
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
        server,
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
            server,
            ann.addr,
            0x24,
            0,
            json!({"world_tick": tick, "entities": [transform(1, ti), transform(50, -ti)]}),
        )?;
        if tick % 2 == 0 {
            rt.send(server, ann.addr, 0x25, 0, json!({"world_tick": tick, "entities": [
                {"entity_id": 50, "vel_x": -3, "vel_y": 1, "acceleration_x": 0, "acceleration_y": -1}]}))?;
        }
        if tick % 3 == 0 {
            rt.send(
                server,
                ann.addr,
                0x26,
                0,
                json!({"world_tick": tick, "entities": [health(1), health(50)]}),
            )?;
            rt.send(
                server,
                ann.addr,
                0x2C,
                0,
                json!({"world_tick": tick, "base_tick": tick - 1, "entities": [transform(1, ti)]}),
            )?;
            rt.send(
                server,
                ann.addr,
                0x2D,
                0,
                json!({"world_tick": tick, "base_tick": tick - 3, "entities": [health(50)]}),
            )?;
        }
        if tick % 4 == 0 {
            rt.send(server, ann.addr, 0x27, 0, json!({"world_tick": tick, "entities": [
                {"entity_id": 1, "weapon_type": 1, "ammo_count": 255, "cooldown_remaining": 120, "power_level": 2}]}))?;
            rt.send(server, ann.addr, 0x28, 0, json!({"world_tick": tick, "entities": [
                {"entity_id": 50, "ai_state": 1, "behavior_type": 5, "target_entity_id": 1, "state_timer": 400}]}))?;
            rt.send(
                server,
                ann.addr,
                0x29,
                0,
                json!({"world_tick": tick, "entities": [
                {"entity_id": 1, "animation_data": [1, 2, 3, 4, 5, 6, 7]}]}),
            )?;
        }
    }
    rt.send(
        server,
        ann.addr,
        0x44,
        0,
        json!({"shooter_id": 1, "projectile_id": 60, "origin_x": 140, "origin_y": 190,
        "direction_x": 1000, "direction_y": 0, "weapon_type": 1}),
    )?;
    rt.reliable(server, &mut ann, ann_id, 0x2A, json!({"entity_id": 1, "component_type": 6,
        "force": {"data_size": 7, "parent_ship_id": 1, "attachment_point": 0, "force_level": 1, "charge_state": 0}}))?;
    rt.reliable(server, &mut ann, ann_id, 0x2E, json!({"entity_id": 50, "entity_type": 2, "components": [
        {"component_type": 1, "transform": {"data_size": 8, "pos_x": 560, "pos_y": 236, "rotation": 0, "scale": 1000}},
        {"component_type": 3, "health": {"data_size": 4, "current_health": 20, "max_health": 20, "current_shield": 0, "max_shield": 0}},
    ]}))?;
    rt.reliable(
        server,
        &mut ann,
        ann_id,
        0x40,
        json!({"player_id": ann_player, "attacker_id": 50, "damage": 10,
        "remaining_health": 80, "remaining_shield": 0, "hit_pos_x": 150, "hit_pos_y": 190}),
    )?;
    rt.send(
        server,
        ann.addr,
        0x42,
        0,
        json!({"player_id": ann_player, "new_score": 1200, "score_delta": -100, "reason": 5}),
    )?;
    rt.reliable(
        server,
        &mut ann,
        ann_id,
        0x43,
        json!({"player_id": ann_player, "powerup_id": 70, "powerup_type": 2, "duration": 0}),
    )?;
    rt.send(
        server,
        ann.addr,
        0x50,
        0,
        json!({"effect_type": 3, "pos_x": 560, "pos_y": 236, "duration_ms": 500,
        "scale": 150, "color_tint_r": 255, "color_tint_g": 128, "color_tint_b": 0}),
    )?;
    rt.send(
        server,
        ann.addr,
        0x51,
        0,
        json!({"effect_type": 1, "pos_x": 560, "pos_y": 236, "volume": 200, "pitch": 100}),
    )?;
    rt.send(server, ann.addr, 0x52, 0, json!({"particle_system_id": 4, "pos_x": 560, "pos_y": 236, "velocity_x": -2,
        "velocity_y": 3, "particle_count": 40, "lifetime_ms": 800, "color_start_r": 255, "color_start_g": 255,
        "color_start_b": 0, "color_end_r": 128, "color_end_g": 0, "color_end_b": 0}))?;
    rt.send(
        server,
        ann.addr,
        0x64,
        0,
        json!({"force_entity_id": 80, "parent_ship_id": 1, "attachment_point": 1,
        "power_level": 2, "charge_percentage": 75, "is_firing": 1}),
    )?;
    rt.send(server, ann.addr, 0x65, 0, json!({"entity_id": 50, "current_state": 2, "behavior_type": 10,
        "target_entity_id": 1, "waypoint_x": 150, "waypoint_y": 190, "state_timer": 250, "padding": [0, 0]}))?;
    rt.reliable(
        server,
        &mut ann,
        ann_id,
        0x2B,
        json!({"entity_id": 1, "component_type": 6}),
    )?;
    rt.reliable(server, &mut ann, ann_id, 0x22, json!({"entity_id": 50, "destroy_reason": 0, "final_position_x": 560, "final_position_y": 236}))?;
    rt.reliable(
        server,
        &mut ann,
        ann_id,
        0x41,
        json!({"player_id": ann_player, "killer_id": 51, "score_before_death": 1200,
        "death_pos_x": 300, "death_pos_y": 100}),
    )?;
    rt.reliable(server, &mut ann, ann_id, 0x62, json!({"completed_level": 1, "next_level": 255, "bonus_score": 5000, "completion_time": 95}))?;
    rt.reliable(
        server,
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
    rt.ack(server, ann.addr, bye, ann_id)?;
    Ok(())
}

/// A client turned away, acknowledging the rejection.
fn eve(rt: &mut Rt, server: &mut Peer) -> io::Result<()> {
    let s = rt.server;
    let mut eve = Peer::at(addr(3, 4, 41004));
    rt.send(
        &mut eve,
        s,
        desc::CLIENT_CONNECT,
        0,
        json!({"protocol_version": 1, "player_name": "eve", "client_id": 9}),
    )?;
    rt.reliable(
        server,
        &mut eve,
        9,
        desc::SERVER_REJECT,
        json!({"reject_code": 0, "reason_message": "server full"}),
    )?;
    Ok(())
}

/// Conversation 2: one broken rule per datagram.
fn bob(rt: &mut Rt, server: &mut Peer) -> io::Result<()> {
    let s = rt.server;
    let mut bob = Peer::at(addr(3, 3, 41003));
    let bob_id = 8;
    rt.send(
        &mut bob,
        s,
        desc::CLIENT_CONNECT,
        0,
        json!({"protocol_version": 1, "player_name": [0x62, 0xFF, 0x62], "client_id": bob_id}),
    )?;
    rt.capture.expect(Rule::RtUtf8, 1);
    rt.reliable(server, &mut bob, bob_id, desc::SERVER_ACCEPT,
        json!({"assigned_player_id": 2, "max_players": 4, "game_instance_id": 99, "server_tickrate": 60}))?;
    rt.send(
        server,
        bob.addr,
        0x40,
        0,
        json!({"player_id": 2, "attacker_id": 50, "damage": 5,
        "remaining_health": 95, "remaining_shield": 0, "hit_pos_x": 10, "hit_pos_y": 20}),
    )?;
    rt.capture.expect(Rule::RtReliableFlagMissing, 1);
    rt.raw(server, bob.addr, 0x30, 0, &[1, 2, 3]);
    rt.capture.expect(Rule::RtUnknownType, 1);
    rt.raw(server, bob.addr, 0x00, 0, &[]);
    rt.capture.expect(Rule::RtPacketType, 1);
    let fire = rt.payload(
        message(0x44)?.body,
        &json!({"shooter_id": 2, "projectile_id": 61, "origin_x": 0, "origin_y": 0,
        "direction_x": 0, "direction_y": 1000, "weapon_type": 0}),
    )?;
    rt.raw(server, bob.addr, 0x44, 0, &fire[..10]);
    rt.capture.expect(Rule::RtSize, 1);
    let mut snapshot = rt.payload(
        message(0x26)?.body,
        &json!({"world_tick": 5, "entities": [health(2)]}),
    )?;
    snapshot.extend([0xEE; 3]);
    rt.raw(server, bob.addr, 0x26, 0, &snapshot);
    rt.capture.expect(Rule::RtTrailing, 1);
    // A spawn bob never acknowledges.
    rt.send(server, bob.addr, 0x21, FLAG_RELIABLE, json!({"entity_id": 2, "entity_type": 1, "position_x": 100,
        "position_y": 300, "mob_variant": 0, "initial_health": 100, "initial_velocity_x": 0, "initial_velocity_y": 0, "is_playable": 1}))?;
    rt.capture.expect(Rule::RtUnacknowledged, 1);
    rt.send(
        server,
        bob.addr,
        0x24,
        0,
        json!({"world_tick": 8, "entity_count": 2, "entities": [transform(2, 8)]}),
    )?;
    rt.capture.expect(Rule::RtTruncated, 1);
    rt.send(
        server,
        bob.addr,
        0x24,
        0x20,
        json!({"world_tick": 6, "entities": [transform(2, 6)]}),
    )?;
    rt.capture.expect(Rule::RtReservedFlags, 1);
    rt.raw(
        server,
        bob.addr,
        0x24,
        FLAG_COMPRESSED,
        &[0x1F, 0x8B, 0x08, 0x00],
    );
    rt.capture.expect(Rule::RtOpaque, 1);
    let crowd: Vec<Value> = (0..100).map(|i| transform(100 + i, i64::from(i))).collect();
    rt.send(
        server,
        bob.addr,
        0x24,
        0,
        json!({"world_tick": 7, "entities": crowd}),
    )?;
    rt.capture.expect(Rule::RtDatagramSize, 1);
    rt.send(
        server,
        bob.addr,
        desc::CLIENT_CONNECT,
        0,
        json!({"protocol_version": 1, "player_name": "server", "client_id": 0}),
    )?;
    rt.capture.expect(Rule::RtDirection, 1);
    rt.reliable(
        server,
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
    Ok(())
}
