//! The clean session every other sample builds on: join, lobby, countdown, level start, play
//! (inputs, snapshots, chunk sets, pings, spawns, destroys, level events) and goodbye. Also the
//! pieces the violation scripts reuse to put their violations inside normal traffic.

use std::io;
use std::net::SocketAddr;

use serde_json::json;

use super::rtype::RtypeBuilder;
use super::script::{
    invalid, level_init, message, Client, Entity, Script, World, MASK_ENEMY, MASK_ITEM,
    MASK_PLAYER, MASK_SHOT, TYPE_PLAYER, TYPE_POWERUP, TYPE_SCOUT, TYPE_SHOT,
};
use crate::datagram::rtype::HeaderLayout;
use crate::proto::rtype::INPUT_FLAGS;
use crate::proto::Rule;

/// Options of the clean session.
#[derive(Clone, Copy, Debug)]
struct Session {
    /// Ticks of play between GAME_START and GAME_END.
    play_ticks: u32,
    /// Whether a third client is denied, kicked and banned.
    third_client: bool,
}

pub(super) fn clean_session_full(s: &mut Script) -> io::Result<()> {
    clean_session(
        s,
        Session {
            play_ticks: 120,
            third_client: true,
        },
    )
}

pub(super) fn clean_session_short(s: &mut Script) -> io::Result<()> {
    clean_session(
        s,
        Session {
            play_ticks: 30,
            third_client: false,
        },
    )
}

/// The short clean session with a desktop's ordinary UDP between its datagrams (DNS, mDNS, SSDP,
/// QUIC, a JSON broadcast, text starting "RT"...): none of that may be judged.
pub(super) fn mixed_desktop(s: &mut Script) -> io::Result<()> {
    let mut session = Vec::new();
    clean_session_short(&mut Script::new(&mut session))?;
    let (first, last) = match (session.first(), session.last()) {
        (Some(f), Some(l)) => (f.ts_us, l.ts_us),
        _ => return Err(invalid("empty session")),
    };
    let count = 3 * super::noise::datagrams().len();
    let period = (last - first) / count as u64;
    let mut noise = super::noise::records(first + period / 2, period, count)
        .into_iter()
        .peekable();
    for record in &session {
        while let Some(n) = noise.next_if(|n| n.ts_us < record.ts_us) {
            s.replay(&n)?;
        }
        s.replay(record)?;
    }
    noise.try_for_each(|n| s.replay(&n))
}

pub(super) fn old_header(s: &mut Script) -> io::Result<()> {
    s.layout = HeaderLayout::Old15;
    clean_session_short(s)?;
    // Reported once per conversation: the short session has two clients.
    s.expect(Rule::RtypeOldHeader, 2);
    Ok(())
}

pub(super) fn link_variety(s: &mut Script) -> io::Result<()> {
    clean_session_short(s)?;
    let from: SocketAddr = "[fd00::5]:41005".parse().map_err(invalid)?;
    let to: SocketAddr = "[fd00::1]:50010".parse().map_err(invalid)?;
    let hello = RtypeBuilder::for_message(message("hello")?)
        .sequence(1)
        .tick(s.tick())
        .build(&[])
        .map_err(invalid)?;
    s.send(from, to, &hello)
}

pub(super) fn two_players() -> io::Result<[Client; 2]> {
    Ok([Client::numbered(0)?, Client::numbered(1)?])
}

/// HELLO / SERVER_HELLO / JOIN_REQUEST / JOIN_ACCEPT for each client, from `tick` on.
fn join(s: &mut Script, clients: &[Client], tick: u32) -> io::Result<u32> {
    let mut t = tick;
    for c in clients {
        s.at(t);
        let seq = s.client(c, "hello", json!({}))?;
        s.server(c, "server_hello", seq, json!({}))?;
        s.at(t + 2);
        let seq = s.client(c, "join_request", json!({}))?;
        s.server(c, "join_accept", seq, json!({}))?;
        t += 5;
    }
    Ok(t)
}

/// GAME_START, LevelInit (acknowledged by each client), and the level's opening events.
fn start_level(s: &mut Script, clients: &[Client], tick: u32) -> io::Result<()> {
    s.at(tick);
    s.broadcast(clients, "game_start", 0, json!({}))?;
    s.broadcast(clients, "levelinit", 0, level_init())?;
    s.at(tick + 1);
    let levelinit = message("levelinit")?.code;
    for c in clients {
        s.client(
            c,
            "ack",
            json!({"ack_sequence": 0, "ack_msg_type": levelinit}),
        )?;
    }
    Ok(())
}

/// The level's opening LevelEvents: background, music, a scroll curve, camera bounds.
fn opening_events(s: &mut Script, clients: &[Client]) -> io::Result<()> {
    let scroll = json!({"event_type": 1, "set_scroll": {"mode": 2, "speed_x": 1.5, "keyframes": [
        {"time": 0.0, "speed_x": 1.5}, {"time": 2.0, "speed_x": 3.0}, {"time": 4.5, "speed_x": 0.5}]}});
    let events = [
        json!({"event_type": 2, "set_background": {"background_id": "bg_space_02"}}),
        json!({"event_type": 3, "set_music": {"music_id": "stage1_theme"}}),
        scroll,
        json!({"event_type": 4, "set_camera_bounds": {"min_x": 0.0, "max_x": 1920.0, "min_y": 0.0, "max_y": 1080.0}}),
    ];
    events
        .into_iter()
        .try_for_each(|e| s.broadcast(clients, "levelevent", 0, e))
}

/// Player `n`'s ship.
fn ship(c: &Client) -> Entity {
    let mut e = Entity::new(
        c.player_id,
        TYPE_PLAYER,
        MASK_PLAYER,
        100.0,
        200.0 + 150.0 * c.player_id as f32,
    );
    e.health = 100;
    e.lives = 3;
    e.status = 0x02; // invincible while the level starts
    e
}

/// Input flags of a player at play tick `i`: a square path, firing now and then, charging.
fn input_flags(player: u32, i: u32) -> u16 {
    let flag = |name: &str| {
        INPUT_FLAGS
            .iter()
            .find(|f| f.name == name)
            .map_or(0, |f| f.value as u16)
    };
    let direction = ["right", "up", "left", "down"][((i / 20 + player) % 4) as usize];
    let mut flags = flag(direction);
    if i.is_multiple_of(10) {
        flags |= flag("fire");
    }
    if i % 40 >= 30 {
        flags |= flag(
            ["charge1", "charge2", "charge3", "charge4", "charge5"][((i % 40 - 30) / 2) as usize],
        );
    }
    flags
}

/// Velocity a ship gets from its input flags.
fn velocity(flags: u16) -> (f32, f32) {
    let flag = |name: &str| {
        INPUT_FLAGS
            .iter()
            .any(|f| f.name == name && flags & f.value as u16 != 0)
    };
    let speed = 120.0;
    let vx = if flag("right") {
        speed
    } else if flag("left") {
        -speed
    } else {
        0.0
    };
    let vy = if flag("down") {
        speed
    } else if flag("up") {
        -speed
    } else {
        0.0
    };
    (vx, vy)
}

/// A complete clean session (see [`Session`]).
fn clean_session(s: &mut Script, opts: Session) -> io::Result<()> {
    let players = two_players()?;
    let mut t = join(s, &players, 0)?;
    if opts.third_client {
        t = deny_third_client(s, t)?;
    }
    // Ready, acknowledged; all ready; countdown 3, 2, 1 a second apart.
    s.at(t);
    let ready = message("ready")?.code;
    for c in &players {
        let seq = s.client(c, "ready", json!({}))?;
        s.server(
            c,
            "server_ack",
            seq,
            json!({"ack_sequence": seq, "ack_msg_type": ready}),
        )?;
    }
    s.at(t + 1);
    s.broadcast(&players, "all_ready", 0, json!({}))?;
    for (k, value) in [3, 2, 1].into_iter().enumerate() {
        s.at(t + 2 + 60 * k as u32);
        s.broadcast(&players, "countdown", 0, json!({"value": value}))?;
    }
    let start = t + 2 + 180;
    start_level(s, &players, start)?;
    opening_events(s, &players)?;
    let mut world = World::default();
    players.iter().for_each(|c| world.add(ship(c)));
    let end = play(s, &players, &mut world, start + 2, opts.play_ticks)?;
    finish(s, &players, end)
}

/// A third client joins too late: denied, then kicked for spamming, then banned.
fn deny_third_client(s: &mut Script, tick: u32) -> io::Result<u32> {
    let c = Client::numbered(2)?;
    s.at(tick);
    let seq = s.client(&c, "hello", json!({}))?;
    s.server(&c, "server_hello", seq, json!({}))?;
    s.at(tick + 2);
    let seq = s.client(&c, "join_request", json!({}))?;
    s.server(&c, "join_deny", seq, json!({}))?;
    s.at(tick + 4);
    s.client(&c, "join_request", json!({}))?;
    s.server(&c, "kick", 0, json!({"reason": 0x12}))?;
    s.at(tick + 8);
    s.client(&c, "join_request", json!({}))?;
    s.server(&c, "ban", 0, json!({"reason": 0x21}))?;
    Ok(tick + 10)
}

/// `ticks` ticks of play from `tick`: inputs, snapshots, chunk sets, pings, spawns, destroys,
/// level events. Returns the tick after the last.
fn play(
    s: &mut Script,
    players: &[Client],
    world: &mut World,
    tick: u32,
    ticks: u32,
) -> io::Result<u32> {
    let mut next_id = 1000;
    for i in 0..ticks {
        let t = tick + i;
        s.at(t);
        for c in players {
            let flags = input_flags(c.player_id, i);
            let ship = world
                .get_mut(c.player_id)
                .ok_or_else(|| invalid("ship missing"))?;
            (ship.vx, ship.vy) = velocity(flags);
            if i == 60 {
                ship.status = 0;
            }
            let input = json!({"player_id": c.player_id, "input_flags": flags, "pos_x": ship.x, "pos_y": ship.y, "angle": 0.0});
            s.client(c, "input", input)?;
            // Each player pings every half second, the two half a cycle apart.
            if i % 30 == (5 + 15 * (c.player_id - 1)) % 30 {
                ping(s, c, t)?;
            }
        }
        world.step();
        play_events(s, players, world, i, &mut next_id)?;
        if i % 30 == 15 {
            for c in players {
                for (index, chunk) in world.chunks(3).into_iter().enumerate() {
                    s.server(
                        c,
                        "snapshot_chunk",
                        (t as u16).wrapping_add(index as u16),
                        chunk,
                    )?;
                }
            }
        }
        s.broadcast(players, "snapshot", t as u16, world.snapshot())?;
    }
    Ok(tick + ticks)
}

/// CLIENT_PING and the server's SERVER_PONG echoing its clientTime and sequence.
fn ping(s: &mut Script, c: &Client, tick: u32) -> io::Result<()> {
    let client_time = 5_000 * c.player_id + tick * 1000 / 60;
    let seq = s.client(c, "ping", json!({"client_time": client_time}))?;
    s.server(c, "pong", seq, json!({"client_time": client_time}))
}

/// What happens at play tick `i` besides inputs and snapshots.
fn play_events(
    s: &mut Script,
    players: &[Client],
    world: &mut World,
    i: u32,
    next_id: &mut u32,
) -> io::Result<()> {
    let spawn = |s: &mut Script, world: &mut World, e: Entity| {
        s.broadcast(players, "entity_spawn", 0, e.spawn_json())?;
        world.add(e);
        Ok::<_, io::Error>(())
    };
    match i {
        10 => {
            // A formation of four scouts: same speed, same health, so snapshots compress.
            for k in 0..4 {
                let mut e = Entity::new(
                    *next_id,
                    TYPE_SCOUT,
                    MASK_ENEMY,
                    1900.0,
                    300.0 + 100.0 * k as f32,
                );
                (e.vx, e.health) = (-90.0, 50);
                *next_id += 1;
                spawn(s, world, e)?;
            }
        }
        20 => s.broadcast(players, "broadcast", 0, json!({"text": "Wave 1 incoming!"}))?,
        40 => {
            let ship = world.get_mut(1).ok_or_else(|| invalid("ship missing"))?;
            let mut e = Entity::new(900, TYPE_SHOT, MASK_SHOT, ship.x + 32.0, ship.y);
            e.vx = 600.0;
            spawn(s, world, e)?;
        }
        55 => {
            world.remove(900);
            s.broadcast(players, "entity_destroyed", 0, json!({"entity_id": 900}))?;
        }
        60 => s.broadcast(
            players,
            "levelevent",
            0,
            json!({"event_type": 5, "gate_open": {"gate_id": "gate_a"}}),
        )?,
        70 => {
            let mut e = Entity::new(*next_id, TYPE_POWERUP, MASK_ITEM, 1200.0, 540.0);
            e.vx = -30.0;
            *next_id += 1;
            spawn(s, world, e)?;
        }
        90 => {
            world.remove(1001);
            s.broadcast(players, "entity_destroyed", 0, json!({"entity_id": 1001}))?;
        }
        100 => s.broadcast(
            players,
            "levelevent",
            0,
            json!({"event_type": 6, "gate_close": {"gate_id": "gate_a"}}),
        )?,
        105 => {
            let scroll = json!({"event_type": 1, "set_scroll": {"mode": 0, "speed_x": 2.0, "keyframes": []}});
            s.broadcast(players, "levelevent", 0, scroll)?;
        }
        _ => {}
    }
    Ok(())
}

/// GAME_END; player 2 leaves (acknowledged, announced to player 1); player 1 leaves and the
/// server closes the session. The last datagram is SERVER_DISCONNECT.
fn finish(s: &mut Script, players: &[Client; 2], tick: u32) -> io::Result<()> {
    let [p1, p2] = players;
    s.at(tick);
    s.broadcast(players, "game_end", 0, json!({"player_id": p1.player_id}))?;
    s.at(tick + 30);
    let disconnect = message("disconnect")?.code;
    let seq = s.client(p2, "disconnect", json!({"reason": 0x01}))?;
    s.server(
        p2,
        "server_ack",
        seq,
        json!({"ack_sequence": seq, "ack_msg_type": disconnect}),
    )?;
    s.server(
        p1,
        "player_disconnected",
        0,
        json!({"player_id": p2.player_id}),
    )?;
    s.at(tick + 60);
    let seq = s.client(p1, "disconnect", json!({"reason": 0x01}))?;
    s.server(p1, "server_disconnect", seq, json!({"reason": 0x01}))
}

/// Joins `clients`, starts the level and returns the tick play can begin, with their ships.
pub(super) fn prelude(s: &mut Script, clients: &[Client]) -> io::Result<(u32, World)> {
    let t = join(s, clients, 0)?;
    start_level(s, clients, t)?;
    let mut world = World::default();
    clients.iter().for_each(|c| world.add(ship(c)));
    Ok((t + 5, world))
}

/// A few ticks of conforming inputs and snapshots, so violations sit inside normal traffic.
pub(super) fn filler(
    s: &mut Script,
    clients: &[Client],
    world: &mut World,
    tick: u32,
    ticks: u32,
) -> io::Result<u32> {
    for i in 0..ticks {
        s.at(tick + i);
        for c in clients {
            let ship = world
                .get_mut(c.player_id)
                .ok_or_else(|| invalid("ship missing"))?;
            let input = json!({"player_id": c.player_id, "input_flags": 0x0008, "pos_x": ship.x, "pos_y": ship.y, "angle": 0.0});
            s.client(c, "input", input)?;
        }
        world.step();
        s.broadcast(clients, "snapshot", (tick + i) as u16, world.snapshot())?;
    }
    Ok(tick + ticks)
}

/// CLIENT_DISCONNECT and SERVER_DISCONNECT for each client.
pub(super) fn farewell(s: &mut Script, clients: &[Client], tick: u32) -> io::Result<()> {
    s.at(tick);
    for c in clients {
        let seq = s.client(c, "disconnect", json!({"reason": 0x01}))?;
        s.server(c, "server_disconnect", seq, json!({"reason": 0x01}))?;
    }
    Ok(())
}

/// Adds a formation of scouts (so snapshots exceed 64 bytes and compress).
pub(super) fn add_scouts(world: &mut World, count: u32) {
    for k in 0..count {
        let mut e = Entity::new(
            1000 + k,
            TYPE_SCOUT,
            MASK_ENEMY,
            1800.0,
            300.0 + 80.0 * k as f32,
        );
        (e.vx, e.health) = (-90.0, 50);
        world.add(e);
    }
}
