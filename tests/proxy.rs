//! `rtype-inspect proxy` on loopback: a scripted client and server (from documents 001 and 002:
//! the client pings, the server answers from another socket than the one it listens on, as the
//! reference server does, and streams snapshots) play a bounded session through the proxy, which
//! stops by itself (`--count`). Rates are checked against binomial bounds (about ±4.5 sigma),
//! the record against what the endpoints saw, and `check` against the injected loss.

#[path = "support/bin.rs"]
mod bin;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rtype_inspect::proto::profile::Profile;
use rtype_inspect::proto::rtype::MESSAGES;
use rtype_inspect::samplegen::rtype::RtypeBuilder;
use serde_json::{json, Value};

/// An rtype datagram of message `short` (ping, snapshot) with sequence and tick `n`.
fn datagram(short: &str, n: u16, body: &Value) -> Vec<u8> {
    let msg = MESSAGES.iter().find(|m| m.short == short).unwrap();
    RtypeBuilder::for_message(msg)
        .sequence(n)
        .tick(u32::from(n))
        .build_message(msg, body, &Profile::document())
        .unwrap()
}

/// The sequence number of an rtype datagram (17-byte header: magic 4, version 1, packet type 1,
/// message type 1, sequence 2).
fn sequence(d: &[u8]) -> u16 {
    u16::from_be_bytes([d[7], d[8]])
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtype-proxy-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Starts the proxy on `host` (a loopback address); returns it and the address it listens on
/// (its first line on stderr).
fn start_proxy(
    host: &str,
    args: &[String],
) -> (Child, SocketAddr, BufReader<std::process::ChildStderr>) {
    let mut child = Command::new(bin::BIN)
        .arg("proxy")
        .args(["--listen", &format!("{host}:0")])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split_whitespace()
        .nth(2)
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .parse()
        .unwrap();
    (child, addr, err)
}

/// Waits for the proxy to stop by itself (at most 20 s); its summary (JSON).
fn finish(mut child: Child) -> Value {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the proxy did not stop");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string("docs/schemas/proxy.schema.json").unwrap())
            .unwrap();
    let errors: Vec<String> = jsonschema::validator_for(&schema)
        .unwrap()
        .iter_errors(&summary)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(summary["schema"], "proxy/1");
    summary
}

/// What the endpoints received, in order.
struct Seen {
    server: Vec<Vec<u8>>,
    client: Vec<Vec<u8>>,
}

/// Receives on `socket` until it has been quiet for 1.5 s, handing each datagram to `each`.
fn receive_all(socket: &UdpSocket, mut each: impl FnMut(&[u8])) -> Vec<Vec<u8>> {
    socket
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    while let Ok((n, _)) = socket.recv_from(&mut buf) {
        each(&buf[..n]);
        got.push(buf[..n].to_vec());
    }
    got
}

/// A session of `pings` client pings and `snapshots` server snapshots, 1 ms apart, through a
/// proxy given `impairments`; the proxy stops once it has received them all.
fn session(pings: u16, snapshots: u16, impairments: &[&str], record: &Path) -> (Value, Seen) {
    session_on("127.0.0.1", pings, snapshots, false, impairments, record)
}

/// [`session`] with every endpoint on the loopback address `host`; with `pongs`, the server
/// answers each ping it gets with a pong of its sequence number (the proxy then stops once it
/// has received a pong for every ping too: give it no loss).
fn session_on(
    host: &str,
    pings: u16,
    snapshots: u16,
    pongs: bool,
    impairments: &[&str],
    record: &Path,
) -> (Value, Seen) {
    let any = format!("{host}:0");
    let server = UdpSocket::bind(&any).unwrap();
    let reply = UdpSocket::bind(&any).unwrap();
    let mut args: Vec<String> = impairments.iter().map(|s| s.to_string()).collect();
    let total = u32::from(pings) * (1 + u32::from(pongs)) + u32::from(snapshots);
    args.extend([
        "--to".into(),
        server.local_addr().unwrap().to_string(),
        "-w".into(),
        record.display().to_string(),
        "--format".into(),
        "json".into(),
        "--count".into(),
        total.to_string(),
    ]);
    let (child, proxy, _stderr) = start_proxy(host, &args);
    let (first_tx, first_rx) = mpsc::channel();
    let server_side = thread::spawn(move || {
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 2048];
        let (n, client) = server.recv_from(&mut buf).unwrap();
        first_tx.send(()).unwrap();
        let answer = reply.try_clone().unwrap();
        let pong = move |d: &[u8]| {
            if pongs {
                let k = sequence(d);
                let pong = datagram("pong", k, &json!({"client_time": k}));
                answer.send_to(&pong, client).unwrap();
            }
        };
        pong(&buf[..n]);
        let streamer = thread::spawn(move || {
            for k in 1..=snapshots {
                reply
                    .send_to(&datagram("snapshot", k, &json!({"entities": []})), client)
                    .unwrap();
                thread::sleep(Duration::from_millis(1));
            }
        });
        let mut got = vec![buf[..n].to_vec()];
        got.extend(receive_all(&server, pong));
        streamer.join().unwrap();
        got
    });
    let client = UdpSocket::bind(&any).unwrap();
    let pinger = client.try_clone().unwrap();
    let client_side = thread::spawn(move || {
        for k in 1..=pings {
            let d = datagram("ping", k, &json!({"client_time": k}));
            pinger.send_to(&d, proxy).unwrap();
            thread::sleep(Duration::from_millis(1));
        }
    });
    let seen_client = receive_all(&client, |_| {});
    client_side.join().unwrap();
    let _ = first_rx.recv_timeout(Duration::from_secs(5));
    let seen_server = server_side.join().unwrap();
    let summary = finish(child);
    (
        summary,
        Seen {
            server: seen_server,
            client: seen_client,
        },
    )
}

/// A frame of the record: its interface, UDP ports, payload, comment.
#[derive(Debug)]
struct Recorded {
    interface: u32,
    ports: (u16, u16),
    payload: Vec<u8>,
    comment: String,
}

/// The Enhanced Packet Blocks of a little-endian pcapng whose frames are Ethernet/IPv4/UDP.
fn read_record(path: &Path) -> Vec<Recorded> {
    let bytes = std::fs::read(path).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let mut frames = Vec::new();
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let (kind, len) = (u32_at(at), u32_at(at + 4) as usize);
        if kind == 6 {
            let body = &bytes[at + 8..at + len - 4];
            let caplen = u32::from_le_bytes(body[12..16].try_into().unwrap()) as usize;
            let data = &body[20..20 + caplen];
            let mut opt = 20 + caplen.div_ceil(4) * 4;
            let mut comment = String::new();
            while opt + 4 <= body.len() {
                let code = u16::from_le_bytes([body[opt], body[opt + 1]]);
                let olen = u16::from_le_bytes([body[opt + 2], body[opt + 3]]) as usize;
                if code == 1 {
                    comment = String::from_utf8(body[opt + 4..opt + 4 + olen].to_vec()).unwrap();
                }
                if code == 0 {
                    break;
                }
                opt += 4 + olen.div_ceil(4) * 4;
            }
            frames.push(Recorded {
                interface: u32_at(at + 8),
                ports: (
                    u16::from_be_bytes([data[34], data[35]]),
                    u16::from_be_bytes([data[36], data[37]]),
                ),
                payload: data[42..].to_vec(),
                comment,
            });
        }
        at += len;
    }
    frames
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

/// The fates the proxy decided, per direction, without their times: what a seed decides.
fn fates(record: &[Recorded]) -> Vec<(u32, u16, String)> {
    let mut f: Vec<(u32, u16, String)> = record
        .iter()
        .filter(|r| !r.comment.contains("delivered"))
        .map(|r| {
            let kind: String = r.comment.chars().filter(|c| !c.is_ascii_digit()).collect();
            (r.interface, sequence(&r.payload), kind)
        })
        .collect();
    f.sort();
    f
}

#[test]
fn loss_delay_and_duplication_are_within_bounds_and_recorded() {
    let dir = temp("rates");
    let impair = [
        "--loss",
        "10%",
        "--duplicate",
        "5%",
        "--delay",
        "30ms",
        "--seed",
        "7",
    ];
    let record = dir.join("session.pcapng");
    let (summary, seen) = session(1000, 1000, &impair, &record);
    let c = &summary["clients"][0];
    let (up, down) = (&c["client_to_server"], &c["server_to_client"]);
    assert_eq!(summary["clients"].as_array().unwrap().len(), 1);
    assert_eq!(
        (count(&up["received"]), count(&down["received"])),
        (1000, 1000)
    );
    for d in [up, down] {
        // 10 % of 1000: 100 ± 9.5; 5 % of about 900: 45 ± 6.5.
        let lost = count(&d["dropped"]["loss"]);
        assert!((57..=143).contains(&lost), "{lost} lost");
        let dup = count(&d["duplicated"]);
        assert!((16..=75).contains(&dup), "{dup} duplicated");
        assert_eq!(count(&d["delivered"]), 1000 - lost + dup);
        let delay = d["mean_delay_ms"].as_f64().unwrap();
        assert!((30.0..40.0).contains(&delay), "{delay} ms");
    }
    // The endpoints got what the proxy says it delivered, and what the record shows delivered,
    // in the same order.
    assert_eq!(seen.server.len() as u64, count(&up["delivered"]));
    assert_eq!(seen.client.len() as u64, count(&down["delivered"]));
    let frames = read_record(&record);
    let delivered = |interface: u32| -> Vec<Vec<u8>> {
        frames
            .iter()
            .filter(|f| f.interface == interface && f.comment.contains("delivered"))
            .map(|f| f.payload.clone())
            .collect()
    };
    assert_eq!(delivered(1), seen.server);
    assert_eq!(delivered(0), seen.client);
    // Every datagram received appears once where it was sent, with its fate.
    let sent = frames.iter().filter(|f| !f.comment.contains("delivered"));
    assert_eq!(sent.clone().count(), 2000);
    let dropped = sent
        .filter(|f| f.comment == "proxy: dropped (loss)")
        .count() as u64;
    assert_eq!(
        dropped,
        count(&up["dropped"]["loss"]) + count(&down["dropped"]["loss"])
    );
    assert!(frames
        .iter()
        .any(|f| f.comment.starts_with("proxy: delayed 30.") && f.comment.contains("duplicated")));
    // The proxy's ports: the client-side frames go to or come from the port it listens on.
    assert!(frames.iter().all(|f| f.ports.0 != f.ports.1));

    // The same seed decides the same fates; another seed others.
    let again = dir.join("again.pcapng");
    session(1000, 1000, &impair, &again);
    assert_eq!(fates(&read_record(&again)), fates(&frames));
    let other = dir.join("other.pcapng");
    let mut impair8 = impair;
    impair8[7] = "8";
    session(1000, 1000, &impair8, &other);
    assert_ne!(fates(&read_record(&other)), fates(&frames));

    // check reads the record as any capture and finds the loss the proxy caused.
    let config = dir.join("rtype-inspect.toml");
    std::fs::write(&config, "[budgets]\nloss_percent_max = 2\n").unwrap();
    let (code, out, err) = bin::run(&[
        "check",
        "--config",
        config.to_str().unwrap(),
        "--format",
        "json",
        record.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("budget.loss-percent"), "{out}");
    // stats tells the proxy's loss from loss before it: each side is a conversation, complete
    // in the direction sent there, and short by exactly the proxy's drops (and long by its
    // duplicates) in the direction delivered there.
    let (_, out, _) = bin::run(&["stats", "--format", "json", record.to_str().unwrap()]);
    let stats: Value = serde_json::from_str(&out).unwrap();
    let mut seen: Vec<(String, u64, u64, u64)> = stats["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["sequences"].as_array().unwrap().clone())
        .map(|s| {
            let n = |k: &str| count(&s[k]);
            let direction = s["direction"].as_str().unwrap().to_string();
            (direction, n("received"), n("lost"), n("duplicates"))
        })
        .collect();
    seen.sort();
    let delivered = |d: &Value| {
        let lost = count(&d["dropped"]["loss"]);
        (1000 - lost, lost, count(&d["duplicated"]))
    };
    let (u, d) = (delivered(up), delivered(down));
    let mut expected = vec![
        ("client_to_server".to_string(), 1000, 0, 0),
        ("client_to_server".to_string(), u.0, u.1, u.2),
        ("server_to_client".to_string(), 1000, 0, 0),
        ("server_to_client".to_string(), d.0, d.1, d.2),
    ];
    expected.sort();
    assert_eq!(seen, expected);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn only_and_schedule_drop_the_selected_messages_in_the_window() {
    let dir = temp("schedule");
    let record = dir.join("stall.pcapng");
    let impair = [
        "--only",
        "rtype.msg_type == SERVER_SNAPSHOT",
        "--schedule",
        "0.2s-0.5s",
        "--mtu",
        "1200",
    ];
    let (summary, seen) = session(300, 600, &impair, &record);
    let c = &summary["clients"][0];
    let (up, down) = (&c["client_to_server"], &c["server_to_client"]);
    // Pings are not selected: all delivered.
    assert_eq!(count(&up["delivered"]), 300);
    assert_eq!(seen.server.len(), 300);
    // Snapshots in the window are dropped, as one run of consecutive sequence numbers.
    let stalled = count(&down["dropped"]["schedule"]);
    assert!((100..=320).contains(&stalled), "{stalled}");
    let got: Vec<u16> = seen.client.iter().map(|d| sequence(d)).collect();
    assert_eq!(got.len() as u64, 600 - stalled);
    let gaps: Vec<(u16, u16)> = got
        .windows(2)
        .filter(|w| w[1] != w[0] + 1)
        .map(|w| (w[0], w[1]))
        .collect();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(u64::from(gaps[0].1 - gaps[0].0 - 1), stalled);
    let comments = read_record(&record)
        .into_iter()
        .filter(|f| f.comment == "proxy: dropped (schedule)")
        .count() as u64;
    assert_eq!(comments, stalled);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_flood_fills_only_its_own_queue() {
    // One client floods 1,400-byte datagrams into a 300 ms delay; its queue holds at most
    // 1 MiB (each datagram's buffer and 64 bytes), the rest is dropped as `queue full`, and
    // another client's pings all get through.
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let args: Vec<String> = [
        "--delay",
        "300ms",
        "--duration",
        "2.5",
        "--format",
        "json",
        "--to",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([server.local_addr().unwrap().to_string()])
    .collect();
    let (child, proxy, _stderr) = start_proxy("127.0.0.1", &args);
    let drain = thread::spawn(move || receive_all(&server, |_| {}));
    let flooder = UdpSocket::bind("127.0.0.1:0").unwrap();
    let pinger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let flood = thread::spawn(move || {
        for k in 0..6000u16 {
            let _ = flooder.send_to(&[k as u8; 1400], proxy);
            if k % 50 == 0 {
                thread::sleep(Duration::from_millis(1));
            }
        }
    });
    for k in 1..=50u16 {
        pinger
            .send_to(&datagram("ping", k, &json!({"client_time": k})), proxy)
            .unwrap();
        thread::sleep(Duration::from_millis(5));
    }
    flood.join().unwrap();
    let summary = finish(child);
    let server_got = drain.join().unwrap();
    let clients = summary["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 2);
    let of = |port: u16| {
        clients
            .iter()
            .find(|c| c["client"].as_str().unwrap().ends_with(&format!(":{port}")))
            .unwrap()["client_to_server"]
            .clone()
    };
    let pings = of(pinger.local_addr().unwrap().port());
    assert_eq!(
        (count(&pings["received"]), count(&pings["delivered"])),
        (50, 50)
    );
    let flood = clients
        .iter()
        .find(|c| c["client_to_server"] != pings)
        .unwrap();
    let flood = &flood["client_to_server"];
    let (received, full) = (
        count(&flood["received"]),
        count(&flood["dropped"]["queue_full"]),
    );
    // However many the kernel let through, at most 1 MiB / (1,400 + 64) = 716 wait at once.
    assert!(received > 1000, "{received}");
    assert!(full > 0, "{flood}");
    assert_eq!(count(&flood["delivered"]) + full, received);
    // What the server's socket got is at most what the proxy sent: when the delayed flood comes
    // due at once it overflows that socket's buffer (the kernel's, after the proxy), pings with it.
    let pings_got = server_got.iter().filter(|d| d.len() != 1400).count();
    assert!(pings_got <= 50 && server_got.len() as u64 <= 50 + count(&flood["delivered"]));
}

/// A preset gives each direction its figures and the options change them, for everyone and for
/// one client (`--client`); the relay works on IPv6 loopback, and its record reads as the
/// session it was.
#[test]
fn a_preset_and_a_clients_own_settings_over_ipv6() {
    let dir = temp("preset-ipv6");
    let record = dir.join("session.pcapng");
    let impair = [
        "--preset",
        "edge",
        "--loss",
        "0",
        "--jitter",
        "0ms",
        "--client",
        "1:rate=1mbit",
        "--client",
        "2:preset=4g",
    ];
    let (summary, seen) = session_on("[::1]", 100, 100, false, &impair, &record);
    assert_eq!(
        summary["impairments"],
        "client to server: delay 650.000 ms ± 0.000 ms, rate 260000 bit/s; \
         server to client: delay 650.000 ms ± 0.000 ms, rate 200000 bit/s"
    );
    assert_eq!((seen.server.len(), seen.client.len()), (100, 100));
    let c = &summary["clients"][0];
    assert!(c["client"].as_str().unwrap().starts_with("[::1]:"), "{c}");
    assert_eq!(
        c["impairments"],
        "delay 650.000 ms ± 0.000 ms, rate 1000000 bit/s"
    );
    for d in ["client_to_server", "server_to_client"] {
        assert_eq!(count(&c[d]["delivered"]), 100);
        // The delay, and the queue behind the rate: 100 datagrams of 1 ms apart take longer.
        let delay = c[d]["mean_delay_ms"].as_f64().unwrap();
        assert!((650.0..1000.0).contains(&delay), "{d}: {delay} ms");
    }
    let out = Command::new(bin::BIN)
        .arg(&record)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let read: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(read["counts"]["datagrams"], 400, "{read}");
    assert!(read["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["client"].as_str().unwrap().starts_with("[::1]:")));
}

/// The summary's decoded figures are the session analysis of what each end was delivered: the
/// sequence loss each end saw is exactly the proxy's drops in that direction (the seed drops
/// neither direction's first datagram nor its last, so every drop is a gap), and every figure is
/// what `stats` and the summary find in the record.
#[test]
fn decoded_figures_are_what_each_end_was_delivered() {
    let dir = temp("decoded");
    let record = dir.join("session.pcapng");
    let (summary, seen) = session(300, 300, &["--loss", "10%", "--seed", "3"], &record);
    let c = &summary["clients"][0];
    let decoded = &c["decoded"];
    for (key, got) in [
        ("client_to_server", &seen.server),
        ("server_to_client", &seen.client),
    ] {
        let numbers: Vec<u16> = got.iter().map(|d| sequence(d)).collect();
        let dropped = count(&c[key]["dropped"]["loss"]);
        assert!(dropped > 10, "{key}: {dropped} dropped");
        assert_eq!(numbers.len() as u64, 300 - dropped, "{key}");
        assert_eq!((numbers[0], numbers[numbers.len() - 1]), (1, 300), "{key}");
        let s = &decoded["sequences"][key];
        assert_eq!(
            (count(&s["received"]), count(&s["lost"])),
            (300 - dropped, dropped),
            "{key}"
        );
        assert_eq!(s["loss_ratio"].as_f64().unwrap(), dropped as f64 / 300.0);
    }
    let snapshots = &decoded["snapshots"];
    assert_eq!(
        count(&snapshots["ticks"]),
        300 - count(&c["server_to_client"]["dropped"]["loss"])
    );
    let rate = snapshots["rate_hz"].as_f64().unwrap();
    assert!(rate > 60.0, "{rate} Hz");
    let (p95, max) = (&snapshots["gap_p95_ms"], &snapshots["gap_max_ms"]);
    assert!(p95.as_f64().unwrap() <= max.as_f64().unwrap());
    // No pongs: no round trip.
    assert_eq!(
        decoded["rtt_ms"],
        json!({"pairs": 0, "p50": null, "max": null})
    );

    // stats of the record: the client side is the conversation of the client's address, the
    // server side the other.
    let (_, out, _) = bin::run(&["stats", "--format", "json", record.to_str().unwrap()]);
    let stats: Value = serde_json::from_str(&out).unwrap();
    let conversations = stats["conversations"].as_array().unwrap();
    assert_eq!(conversations.len(), 2);
    let side = |client: bool| {
        conversations
            .iter()
            .find(|s| (s["client"] == c["client"]) == client)
            .unwrap()
    };
    let (client_side, server_side) = (side(true), side(false));
    let snaps = &client_side["snapshots"];
    assert_eq!(snapshots["ticks"], snaps["ticks"]);
    assert_eq!(snapshots["rate_hz"], snaps["rate_hz"]);
    assert_eq!(snapshots["gap_max_ms"], snaps["gap_ms"]["max"]);
    let lost = |s: &Value, i: usize| {
        (
            s["sequences"][i]["received"].clone(),
            s["sequences"][i]["lost"].clone(),
        )
    };
    let sequences = &decoded["sequences"];
    assert_eq!(
        lost(server_side, 0),
        (
            sequences["client_to_server"]["received"].clone(),
            sequences["client_to_server"]["lost"].clone()
        )
    );
    assert_eq!(
        lost(client_side, 1),
        (
            sequences["server_to_client"]["received"].clone(),
            sequences["server_to_client"]["lost"].clone()
        )
    );
    // Findings, as the summary of the record counts them: on each side, the snapshot rate is
    // far from nominal (1 kHz).
    let (_, out, _) = bin::run(&["--format", "json", record.to_str().unwrap()]);
    let read: Value = serde_json::from_str(&out).unwrap();
    let findings: u64 = read["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| count(&v["count"]))
        .sum();
    assert_eq!(findings, 2, "{}", read["violations"]);
    assert_eq!(read["violations"][0]["id"], "session.snapshot-rate");
    assert_eq!(
        decoded["findings"],
        json!({"client_side": 1, "server_side": 1})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A round trip is the client's: from its ping reaching the proxy to the pong delivered to it,
/// so the delay counts both ways (20 ms each: with the pings about 1 ms apart, some 40 await
/// their pong at once, more than the 16 the session analysis once kept, and every one pairs);
/// with no snapshot, the snapshot figures are null.
#[test]
fn round_trips_count_the_delay_both_ways() {
    let dir = temp("rtt");
    let record = dir.join("session.pcapng");
    let (summary, seen) = session_on("127.0.0.1", 100, 0, true, &["--delay", "20ms"], &record);
    assert_eq!((seen.server.len(), seen.client.len()), (100, 100));
    let decoded = &summary["clients"][0]["decoded"];
    let rtt = &decoded["rtt_ms"];
    assert_eq!(count(&rtt["pairs"]), 100);
    let (p50, max) = (rtt["p50"].as_f64().unwrap(), rtt["max"].as_f64().unwrap());
    assert!((39.99..=max).contains(&p50), "{rtt}");
    assert_eq!(
        decoded["sequences"]["client_to_server"],
        json!({"received": 100, "lost": 0, "loss_ratio": 0.0})
    );
    assert_eq!(decoded["sequences"]["server_to_client"], Value::Null);
    assert_eq!(
        decoded["snapshots"],
        json!({"ticks": 0, "rate_hz": null, "gap_p95_ms": null, "gap_max_ms": null})
    );
    let _ = std::fs::remove_dir_all(&dir);
}
