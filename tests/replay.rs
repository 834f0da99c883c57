//! `rtype-inspect replay` of a real capture (3 s of tests/fixtures/reference-17byte-1client.pcap)
//! against a scripted server on loopback: every client datagram arrives, in order, with the gaps
//! between them within 2 ms of the capture's (the median gap; every gap within 2 ms plus the worst
//! delay this machine took to wake a sleeping thread meanwhile: on a busy machine, milliseconds,
//! and no process that sleeps keeps time better); the server's answer (from another socket, as the
//! reference server answers) is reported. The server side (`--side server`) feeds a scripted
//! client likewise.

#[path = "support/bin.rs"]
mod bin;

use std::net::UdpSocket;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use rtype_inspect::proto::profile::Profile;
use rtype_inspect::proto::rtype::MESSAGES;
use rtype_inspect::samplegen::rtype::RtypeBuilder;

/// The client datagrams (to port 50010) of a legacy pcap of Ethernet/IPv4/UDP frames, with their
/// times in microseconds; or the server's (the others) when not `to_server`.
fn datagrams(path: &std::path::Path, to_server: bool) -> Vec<(u64, Vec<u8>)> {
    let b = std::fs::read(path).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let nanos = u32_at(0) == 0xA1B2_3C4D;
    let (mut at, mut out) = (24, Vec::new());
    while at + 16 <= b.len() {
        let (secs, frac, caplen) = (u32_at(at), u32_at(at + 4), u32_at(at + 8) as usize);
        let data = &b[at + 16..at + 16 + caplen];
        at += 16 + caplen;
        if (u16::from_be_bytes([data[36], data[37]]) == 50010) == to_server {
            let us = u64::from(secs) * 1_000_000
                + if nanos {
                    u64::from(frac) / 1000
                } else {
                    u64::from(frac)
                };
            out.push((us, data[42..].to_vec()));
        }
    }
    out
}

/// A folder for test `name`, and in it the capture's first 3 s, as the replay reads them.
fn slice(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("rtype-replay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let slice = dir.join("slice.pcap");
    let (code, out, err) = bin::run(&[
        "packets",
        "tests/fixtures/reference-17byte-1client.pcap",
        "-Y",
        "frame.time_relative <= 3",
        "-w",
        slice.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    (dir, slice)
}

/// The median of how far each gap between `got`'s arrivals is from the capture's, in µs.
fn median_gap_error(got: &[(Instant, Vec<u8>)], expected: &[(u64, Vec<u8>)]) -> i64 {
    let mut errors: Vec<i64> = got
        .windows(2)
        .zip(expected.windows(2))
        .map(|(g, e)| {
            let sent = g[1].0.duration_since(g[0].0).as_micros() as i64;
            (sent - (e[1].0 - e[0].0) as i64).abs()
        })
        .collect();
    errors.sort_unstable();
    errors[errors.len() / 2]
}

#[test]
fn replay_delivers_every_client_datagram_in_order_and_in_time() {
    let (dir, slice) = slice("client");
    let expected = datagrams(&slice, true);
    assert!(expected.len() > 150, "{}", expected.len());

    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let reply = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = server.local_addr().unwrap().to_string();
    let hello = MESSAGES.iter().find(|m| m.short == "server_hello").unwrap();
    let answer = RtypeBuilder::for_message(hello)
        .build_message(hello, &serde_json::json!({}), &Profile::document())
        .unwrap();
    let n = expected.len();
    let listener = thread::spawn(move || {
        server
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 2048];
        let mut got: Vec<(Instant, Vec<u8>)> = Vec::new();
        while got.len() < n {
            let Ok((len, from)) = server.recv_from(&mut buf) else {
                break;
            };
            if got.is_empty() {
                reply.send_to(&answer, from).unwrap();
            }
            got.push((Instant::now(), buf[..len].to_vec()));
        }
        got
    });
    // How late this machine wakes a sleeping thread, measured while the replay runs: the replay
    // cannot keep time better than that, and the gaps are held to 2 ms beyond it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let latency = thread::spawn(move || {
        let mut worst = Duration::ZERO;
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
            let t = Instant::now();
            thread::sleep(Duration::from_millis(1));
            worst = worst.max(t.elapsed().saturating_sub(Duration::from_millis(1)));
        }
        worst
    });
    let record = dir.join("replayed.pcapng");
    let output = Command::new(bin::BIN)
        .args(["replay", "tests/fixtures/reference-17byte-1client.pcap"])
        .args([
            "-Y",
            "frame.time_relative <= 3",
            "--to",
            &to,
            "--format",
            "json",
        ])
        .args(["--linger", "0.5", "-w", record.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let got = listener.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let wake_up = latency.join().unwrap().as_micros() as i64;
    eprintln!("worst wake-up latency while replaying: {wake_up} us");
    let payloads: Vec<&Vec<u8>> = got.iter().map(|(_, p)| p).collect();
    let wanted: Vec<&Vec<u8>> = expected.iter().map(|(_, p)| p).collect();
    assert_eq!(payloads, wanted, "every client datagram, in order");
    let gaps: Vec<(usize, i64, i64)> = got
        .windows(2)
        .enumerate()
        .map(|(i, pair)| {
            let sent = pair[1].0.duration_since(pair[0].0).as_micros() as i64;
            (i, sent, (expected[i + 1].0 - expected[i].0) as i64)
        })
        .collect();
    // Most gaps are kept within 2 ms whatever the load (a wrong clock or speed moves them all).
    let median = median_gap_error(&got, &expected);
    assert!(median <= 2000, "median gap error {median} us");
    let late: Vec<&(usize, i64, i64)> = gaps
        .iter()
        .filter(|(_, sent, original)| (sent - original).abs() > 2000 + wake_up)
        .collect();
    assert!(
        late.is_empty(),
        "gaps (index, replayed us, captured us) off by more than 2 ms + {wake_up} us: {late:?}"
    );
    assert!(
        stderr.contains(&format!(
            "{n} datagrams sent from 1 client socket(s), 1 answers"
        )),
        "{stderr}"
    );
    // The report decodes the exchange: the client's datagrams and the server's answer.
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let text = summary.to_string();
    assert!(text.contains("SERVER_HELLO"), "{text}");
    assert!(record.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--side server` stands in for the capture's server: once a live client has sent, it gets
/// every datagram the captured client got, in order and in time.
#[test]
fn replay_of_the_server_side_feeds_a_live_client() {
    let (dir, slice) = slice("server");
    let expected = datagrams(&slice, false);
    assert!(expected.len() > 150, "{}", expected.len());
    let mut child = Command::new(bin::BIN)
        .args(["replay", "tests/fixtures/reference-17byte-1client.pcap"])
        .args(["-Y", "frame.time_relative <= 3", "--side", "server"])
        .args(["--listen", "127.0.0.1:0", "--linger", "0.5", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    let listen = line
        .strip_prefix("rtype-inspect replay: listening on ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .trim()
        .to_string();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.send_to(b"hello", &listen).unwrap();
    client
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut got: Vec<(Instant, Vec<u8>)> = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok((n, _)) = client.recv_from(&mut buf) {
        got.push((Instant::now(), buf[..n].to_vec()));
    }
    let output = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(output.status.success(), "{rest}");
    let payloads: Vec<&Vec<u8>> = got.iter().map(|(_, p)| p).collect();
    let wanted: Vec<&Vec<u8>> = expected.iter().map(|(_, p)| p).collect();
    assert_eq!(payloads, wanted, "every server datagram, in order");
    let median = median_gap_error(&got, &expected);
    assert!(median <= 2000, "median gap error {median} us");
    assert!(
        rest.contains(&format!(
            "{} datagrams sent to 1 live client(s), 1 answers",
            expected.len()
        )),
        "{rest}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
