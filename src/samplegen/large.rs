//! A large capture for benchmarks: many clients at 60 Hz for as long as it takes to write the
//! requested number of datagrams, streamed to the file as they are made (flat memory).

use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use super::script::{
    level_init, message, Client, Entity, PcapSink, Script, World, XorShift, MASK_ENEMY, MASK_ITEM,
    MASK_PLAYER, MASK_SHOT, TYPE_PLAYER, TYPE_POWERUP, TYPE_SCOUT, TYPE_SHOT,
};

/// The PRNG seed: fixed, so the capture is the same on every run.
const SEED: u64 = 0x5241_5459_5045_2026;
/// Most non-player entities alive at once.
const MAX_ENEMIES: usize = 24;
/// A full-state chunk set every this many ticks.
const CHUNK_PERIOD: u32 = 60;
const CHUNKS: u16 = 3;

/// Writes a pcap of exactly `datagrams` datagrams (fewer only if `datagrams` is tiny): `clients`
/// clients join, then play: inputs every tick, a snapshot per client every tick (LZ4 when it
/// pays), pings, spawns and destroys, and a full-state chunk set every second. Deterministic.
/// Returns `out` once everything is written to it.
pub fn generate_large<W: Write>(out: W, datagrams: u64, clients: u32) -> io::Result<W> {
    generate_large_counted(out, datagrams, clients, &AtomicU64::new(0))
}

/// [`generate_large`], storing the number of datagrams made so far in `made` after every tick
/// (for a progress bar).
pub fn generate_large_counted<W: Write>(
    out: W,
    datagrams: u64,
    clients: u32,
    made: &AtomicU64,
) -> io::Result<W> {
    if clients == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "at least one client is needed",
        ));
    }
    let clients: Vec<Client> = (0..clients)
        .map(Client::numbered)
        .collect::<io::Result<_>>()?;
    let mut sink = PcapSink::new(BufWriter::with_capacity(1 << 20, out))?;
    let mut script = Script::new(&mut sink).limit(datagrams);
    run(&mut script, &clients, made)?;
    drop(script);
    sink.finish()?.into_inner().map_err(|e| e.into_error())
}

fn run(s: &mut Script, clients: &[Client], made: &AtomicU64) -> io::Result<()> {
    let start = lobby(s, clients)?;
    let mut world = World::default();
    for c in clients {
        let mut ship = Entity::new(
            c.player_id,
            TYPE_PLAYER,
            MASK_PLAYER,
            100.0,
            100.0 + 40.0 * (c.player_id % 24) as f32,
        );
        (ship.health, ship.lives) = (100, 3);
        world.add(ship);
    }
    let mut rng = XorShift::new(SEED);
    let mut next_id = 10_000u32;
    let mut tick = start;
    while s.room() > 0 {
        s.at(tick);
        let i = tick - start;
        inputs(s, clients, &mut world, &mut rng, i)?;
        world.step();
        wrap(&mut world);
        spawn_and_destroy(s, clients, &mut world, &mut rng, &mut next_id)?;
        if i % CHUNK_PERIOD == CHUNK_PERIOD / 2
            && s.room() >= u64::from(CHUNKS) * clients.len() as u64
        {
            for c in clients {
                for (index, chunk) in world.chunks(CHUNKS).into_iter().enumerate() {
                    s.server(
                        c,
                        "snapshot_chunk",
                        (tick as u16).wrapping_add(index as u16),
                        chunk,
                    )?;
                }
            }
        }
        s.broadcast(clients, "snapshot", tick as u16, world.snapshot())?;
        made.store(s.sent(), Ordering::Relaxed);
        tick += 1;
    }
    Ok(())
}

/// Every client says hello, joins and gets ready; the level starts. Returns the first play tick.
fn lobby(s: &mut Script, clients: &[Client]) -> io::Result<u32> {
    let ready = message("ready")?.code;
    let levelinit = message("levelinit")?.code;
    for (n, c) in clients.iter().enumerate() {
        s.at(2 * n as u32);
        s.join(c)?;
        let seq = s.client(c, "ready", json!({}))?;
        s.server(
            c,
            "server_ack",
            seq,
            json!({"ack_sequence": seq, "ack_msg_type": ready}),
        )?;
    }
    let t = 2 * clients.len() as u32 + 2;
    s.at(t);
    s.broadcast(clients, "all_ready", 0, json!({}))?;
    s.broadcast(clients, "game_start", 0, json!({}))?;
    s.broadcast(clients, "levelinit", 0, level_init())?;
    s.at(t + 1);
    for c in clients {
        s.client(
            c,
            "ack",
            json!({"ack_sequence": 0, "ack_msg_type": levelinit}),
        )?;
    }
    Ok(t + 2)
}

/// One CLIENT_INPUT per client (random movement within the game's input bits), and a ping per
/// client every second, staggered.
fn inputs(
    s: &mut Script,
    clients: &[Client],
    world: &mut World,
    rng: &mut XorShift,
    i: u32,
) -> io::Result<()> {
    for c in clients {
        let flags = rng.below(0x400) as u16;
        let Some(ship) = world.get_mut(c.player_id) else {
            continue;
        };
        let axis = |plus: u16, minus: u16| match (flags & plus != 0, flags & minus != 0) {
            (true, false) => 150.0,
            (false, true) => -150.0,
            _ => 0.0,
        };
        (ship.vx, ship.vy) = (axis(0x8, 0x4), axis(0x2, 0x1));
        let input = json!({"player_id": c.player_id, "input_flags": flags, "pos_x": ship.x, "pos_y": ship.y, "angle": 0.0});
        s.client(c, "input", input)?;
        if i % 60 == c.player_id * 7 % 60 && s.room() >= 2 {
            let client_time = i * 1000 / 60 + 3_000 * c.player_id;
            let seq = s.client(c, "ping", json!({"client_time": client_time}))?;
            s.server(c, "pong", seq, json!({"client_time": client_time}))?;
        }
    }
    Ok(())
}

/// Keeps everything on a 1920 × 1080 screen (plus a margin) by wrapping around.
fn wrap(world: &mut World) {
    for e in &mut world.entities {
        if e.x < -64.0 {
            e.x += 2048.0;
        } else if e.x > 1984.0 {
            e.x -= 2048.0;
        }
        if e.y < -64.0 {
            e.y += 1208.0;
        } else if e.y > 1144.0 {
            e.y -= 1208.0;
        }
    }
}

/// Now and then an enemy, a shot or a power-up appears, or one disappears.
fn spawn_and_destroy(
    s: &mut Script,
    clients: &[Client],
    world: &mut World,
    rng: &mut XorShift,
    next_id: &mut u32,
) -> io::Result<()> {
    let others = world
        .entities
        .iter()
        .filter(|e| e.type_id != TYPE_PLAYER)
        .count();
    if others < MAX_ENEMIES && rng.below(6) == 0 {
        let (type_id, mask, vx) = match rng.below(4) {
            0 => (TYPE_SHOT, MASK_SHOT, 600.0),
            1 => (TYPE_POWERUP, MASK_ITEM, -30.0),
            _ => (TYPE_SCOUT, MASK_ENEMY, -60.0 - 30.0 * rng.below(3) as f32),
        };
        let (x, y) = (1900.0, 60.0 * (1 + rng.below(16)) as f32);
        let mut e = Entity::new(*next_id, type_id, mask, x, y);
        (e.vx, e.health) = (vx, 50);
        *next_id = next_id.wrapping_add(1).max(10_000);
        s.broadcast(clients, "entity_spawn", 0, e.spawn_json())?;
        world.add(e);
    }
    if others > 0 && rng.below(8) == 0 {
        let victim = rng.below(others as u64) as usize;
        if let Some(id) = world
            .entities
            .iter()
            .filter(|e| e.type_id != TYPE_PLAYER)
            .nth(victim)
            .map(|e| e.id)
        {
            world.remove(id);
            s.broadcast(clients, "entity_destroyed", 0, json!({"entity_id": id}))?;
        }
    }
    Ok(())
}
