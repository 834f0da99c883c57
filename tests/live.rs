//! Live capture on `lo`: a known session (the sample generator's clean session) is sent over UDP
//! to 127.0.0.1 while `rtype-inspect live` captures it; every datagram must be decoded as from the
//! generated file, and the `-w` file must read back with the same results.
//!
//! Capturing needs root (or CAP_NET_RAW): the capture tests are skipped, saying why, only when
//! not root. Every run is bounded in time (`--duration` and a kill deadline) and only 127.0.0.1 is
//! used.

#[path = "support/skip.rs"]
mod skip;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rtype_inspect::samplegen::scenario;
use rtype_inspect::samplegen::script::Record;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_rtype-inspect");
/// The capture tests send on the same ports and would see each other's traffic: one at a time,
/// across processes too (another `cargo test` on the same machine), by a lock on a file.
struct LoLock(#[allow(dead_code)] std::fs::File);

fn lock_lo() -> LoLock {
    use std::os::fd::AsRawFd;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join("rtype-inspect-live-tests.lock"))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    // SAFETY: flock on a descriptor we own; the lock goes with the file when it is dropped.
    while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        assert!(
            Instant::now() < deadline,
            "another live capture test held lo for 300 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    LoLock(file)
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        skip::missing(
            "a live capture test",
            &format!("live capture on lo needs root (euid is {euid}, not 0)"),
        );
    }
    euid == 0
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rtype-inspect-live-{}-{name}", std::process::id()))
}

/// The clean session's datagrams, and its generated pcap written to a temporary file.
fn clean_session(file: &Path) -> Vec<Record> {
    let s = scenario("clean-session").expect("the clean-session scenario");
    std::fs::write(file, s.generate().unwrap().bytes).unwrap();
    s.records().unwrap().0
}

fn run(args: &[&str]) -> Output {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A running `rtype-inspect live`, its stdout collected by a thread, its stderr lines sent over.
struct Capture {
    child: Child,
    stdout: std::thread::JoinHandle<String>,
    stderr: mpsc::Receiver<String>,
}

impl Capture {
    /// Starts the capture and waits (at most 20 s) for its "listening on lo" line.
    fn start(args: &[&str]) -> Capture {
        let mut child = Command::new(BIN)
            .arg("live")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut s = String::new();
            out.read_to_string(&mut s).unwrap();
            s
        });
        let (tx, stderr) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut c = Capture {
            child,
            stdout,
            stderr,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match c.stderr.recv_timeout(left) {
                Ok(line) if line.starts_with("listening on lo") => return c,
                Ok(line) => eprintln!("live: {line}"),
                Err(_) => {
                    let _ = c.child.kill();
                    panic!(
                        "live capture never said it was listening: {:?}",
                        c.child.wait()
                    );
                }
            }
        }
    }

    /// Waits for the end (at most 60 s, then kills it): exit status, stdout, the other stderr lines.
    fn finish(mut self) -> (std::process::ExitStatus, String, Vec<String>) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("live capture did not stop");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stdout = self.stdout.join().unwrap();
        let mut lines = Vec::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(2)) {
            lines.push(line);
        }
        (status, stdout, lines)
    }
}

/// Sends `records` over loopback: each address of the session becomes 127.0.0.1 with the same
/// port, each port its own bound socket (so the server answers from its second port, as in the
/// session), paced at a quarter of the session's own timing.
fn send(records: &[Record]) {
    let local = |a: SocketAddr| SocketAddr::from(([127, 0, 0, 1], a.port()));
    let mut sockets: HashMap<u16, UdpSocket> = HashMap::new();
    for r in records {
        for a in [r.from, r.to] {
            sockets.entry(a.port()).or_insert_with(|| {
                UdpSocket::bind(local(a)).unwrap_or_else(|e| panic!("binding {}: {e}", local(a)))
            });
        }
    }
    let start = Instant::now();
    let t0 = records[0].ts_us;
    for r in records {
        let due = Duration::from_micros((r.ts_us - t0) / 4);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        sockets[&r.from.port()]
            .send_to(&r.bytes, local(r.to))
            .unwrap();
    }
}

fn records(ndjson: &str) -> Vec<Value> {
    ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Datagrams per (message, direction).
fn counts(records: &[Value]) -> BTreeMap<(String, String), u64> {
    let mut m = BTreeMap::new();
    for r in records.iter().filter(|r| r["kind"] == "datagram") {
        *m.entry((
            r["name"].as_str().unwrap().to_string(),
            r["direction"].as_str().unwrap().to_string(),
        ))
        .or_default() += 1;
    }
    m
}

/// Each datagram as ports, message, length and stored CRC, in order: what was sent, whatever the
/// addresses.
fn datagrams(records: &[Value]) -> Vec<(u64, u64, String, u64, u64)> {
    records
        .iter()
        .filter(|r| r["kind"] == "datagram")
        .map(|r| {
            let crc = r["crc"]["stored"].as_u64().unwrap_or(0);
            (
                r["src_port"].as_u64().unwrap(),
                r["dst_port"].as_u64().unwrap(),
                r["name"].as_str().unwrap().to_string(),
                r["length"].as_u64().unwrap(),
                crc,
            )
        })
        .collect()
}

#[test]
fn live_json_decodes_every_datagram_and_writes_them() {
    if !root() {
        return;
    }
    let _lo = lock_lo();
    let (file, written) = (temp("clean.pcap"), temp("json-w.pcap"));
    let sent = clean_session(&file);
    let n = sent.len().to_string();
    let w = written.to_str().unwrap();
    let capture = Capture::start(&[
        "-i",
        "lo",
        "--count",
        &n,
        "--duration",
        "30",
        "-w",
        w,
        "--format",
        "json",
    ]);
    send(&sent);
    let (status, stdout, stderr) = capture.finish();
    assert!(status.success(), "{status:?}: {stderr:?}");

    let expected =
        records(&String::from_utf8(run(&["export", file.to_str().unwrap()]).stdout).unwrap());
    let live = records(&stdout);
    // Streamed NDJSON: the capture first, the datagrams as they came, the summary last.
    assert_eq!(live[0]["kind"], "capture", "{}", live[0]);
    assert_eq!(live[0]["link_types"], serde_json::json!(["ethernet"]));
    assert_eq!(live.last().unwrap()["kind"], "summary");
    // Every datagram decoded, as from the generated file: the same messages, counts, bytes.
    assert_eq!(counts(&live), counts(&expected));
    assert_eq!(datagrams(&live), datagrams(&expected));
    let summary = live.last().unwrap();
    assert_eq!(summary["counts"]["datagrams"], sent.len() as u64);
    assert_eq!(
        summary["conversations"].as_array().unwrap().len(),
        3,
        "{summary}"
    );
    for r in live.iter().filter(|r| r["kind"] == "datagram") {
        assert_eq!(r["violations"], serde_json::json!([]), "{r}");
        assert_eq!(r["crc"]["ok"], true, "{r}");
    }
    assert!(
        stderr.iter().any(|l| l.contains(" dropped by the kernel")),
        "{stderr:?}"
    );

    // The -w file holds every datagram and reads back with the same results, record for record.
    let back = String::from_utf8(run(&["export", w]).stdout).unwrap();
    assert_eq!(counts(&records(&back)), counts(&expected));
    assert_eq!(
        back, stdout,
        "export of the -w file differs from the live timeline"
    );
    let summary_back: Value =
        serde_json::from_slice(&run(&["summary", w, "--format", "json"]).stdout).unwrap();
    assert_eq!(summary_back["counts"]["datagrams"], sent.len() as u64);
    assert_eq!(summary_back["messages"], summary["messages"]);
    assert_eq!(summary_back["capture"]["truncated"], Value::Null);

    std::fs::remove_file(&file).ok();
    std::fs::remove_file(&written).ok();
}

#[test]
fn live_text_prints_the_packet_list_then_the_summary() {
    if !root() {
        return;
    }
    let _lo = lock_lo();
    let (file, written) = (temp("clean-text.pcap"), temp("text-w.pcap"));
    let sent = clean_session(&file);
    let sent = &sent[..40];
    let w = written.to_str().unwrap();
    let capture = Capture::start(&[
        "-i",
        "lo",
        "--count",
        "40",
        "--duration",
        "30",
        "-w",
        w,
        "--type",
        "SERVER_HELLO",
    ]);
    send(sent);
    let (status, stdout, stderr) = capture.finish();
    assert!(status.success(), "{status:?}: {stderr:?}");
    let (list, summary) = stdout
        .split_once("\nlo (live): pcap (ethernet), ")
        .unwrap_or_else(|| panic!("no summary in:\n{stdout}"));
    // The same list, with the same filter, as `packets` prints from the -w file.
    let packets = String::from_utf8(run(&["packets", w, "--type", "SERVER_HELLO"]).stdout).unwrap();
    assert_eq!(list, packets);
    assert_eq!(list.lines().count(), 3, "{list}");
    assert!(
        list.lines()
            .all(|l| l.contains(" S→C rtype ") && l.contains(" SERVER_HELLO seq=")),
        "{list}"
    );
    // The summary of `rtype-inspect FILE`, over the datagrams that came.
    assert!(summary.contains("40 protocol datagrams"), "{summary}");
    let summary_back = String::from_utf8(run(&[w]).stdout).unwrap();
    let (_, rest) = summary_back.split_once(": pcap (ethernet), ").unwrap();
    assert_eq!(summary, rest);
    std::fs::remove_file(&file).ok();
    std::fs::remove_file(&written).ok();
}

/// A little-endian µs Ethernet/IPv4/UDP pcap's datagrams, as the sample generator gives its own.
fn pcap_records(file: &str) -> Vec<Record> {
    let pcap = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    assert_eq!(pcap[..4], [0xD4, 0xC3, 0xB2, 0xA1], "little-endian µs pcap");
    let u32_at = |at: usize| u32::from_le_bytes(pcap[at..at + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let ts_us = u64::from(u32_at(at)) * 1_000_000 + u64::from(u32_at(at + 4));
        let frame = &pcap[at + 16..at + 16 + u32_at(at + 8) as usize];
        let ip = &frame[14..];
        let udp = &ip[usize::from(ip[0] & 0x0F) * 4..];
        let addr = |a: &[u8], p: &[u8]| {
            SocketAddr::from(([a[0], a[1], a[2], a[3]], u16::from_be_bytes([p[0], p[1]])))
        };
        out.push(Record {
            ts_us,
            from: addr(&ip[12..16], &udp[0..2]),
            to: addr(&ip[16..20], &udp[2..4]),
            bytes: udp[8..usize::from(u16::from_be_bytes([udp[4], udp[5]]))].to_vec(),
        });
        at += 16 + frame.len();
    }
    out
}

#[test]
fn live_finds_each_conversations_layout_as_it_goes() {
    if !root() {
        return;
    }
    let _lo = lock_lo();
    // The real 17-byte server's session: its snapshots fit the bundled reference-17byte, which
    // a live capture cannot scan for before reading; each conversation decides as it goes.
    let sent = pcap_records("tests/fixtures/reference-17byte-1client.pcap");
    let n = sent.len().to_string();
    let capture = Capture::start(&[
        "-i",
        "lo",
        "--count",
        &n,
        "--duration",
        "60",
        "--format",
        "json",
    ]);
    send(&sent);
    let (status, stdout, stderr) = capture.finish();
    assert!(status.success(), "{status:?}: {stderr:?}");
    let live = records(&stdout);
    let summary = live.last().unwrap();
    assert_eq!(summary["kind"], "summary");
    assert_eq!(summary["counts"]["datagrams"], sent.len() as u64);
    assert_eq!(summary["profile"], "reference-17byte", "{summary}");
    assert_eq!(summary["conversations"][0]["layout"], "reference-17byte");
    // One departure, at the first snapshot (the capture's frame 10 is the 10th datagram), and
    // none of the cascade the document's layout gives.
    let with: Vec<(u64, Vec<&str>)> = live
        .iter()
        .filter(|r| r["kind"] == "datagram")
        .enumerate()
        .filter_map(|(i, r)| {
            let ids: Vec<&str> = r["violations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["id"].as_str().unwrap())
                .filter(|id| id.starts_with("rtype.snapshot.") || *id == "rtype.message.truncated")
                .collect();
            (!ids.is_empty()).then_some((i as u64 + 1, ids))
        })
        .collect();
    assert_eq!(with, [(10, vec!["rtype.snapshot.layout"])]);
}

#[test]
fn a_full_disk_stops_the_capture_at_once() {
    if !root() {
        return;
    }
    let _lo = lock_lo();
    let started = Instant::now();
    let capture = Capture::start(&["-i", "lo", "--duration", "30", "-w", "/dev/full"]);
    let (status, _, lines) = capture.finish();
    assert_eq!(status.code(), Some(2), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("writing the capture file") && l.contains("No space left")),
        "{lines:?}"
    );
    // The first flush fails within a second or two, long before the 30 s are up.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn unknown_interface_is_a_one_line_error() {
    let out = Command::new(BIN)
        .args(["live", "-i", "rtype-nope0", "--duration", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no interface named `rtype-nope0`"), "{err}");
}

#[test]
fn without_cap_net_raw_the_error_says_so() {
    if !root() {
        return;
    }
    // Drop CAP_NET_RAW from a root child with setpriv (util-linux), when it is installed.
    let probe = Command::new("setpriv").arg("--version").output();
    if !probe.is_ok_and(|o| o.status.success()) {
        skip::missing(
            "without_cap_net_raw_the_error_says_so",
            "setpriv (util-linux) is not installed",
        );
        return;
    }
    let out = Command::new("setpriv")
        .args([
            "--inh-caps=-net_raw",
            "--bounding-set=-net_raw",
            "--",
            BIN,
            "live",
            "-i",
            "lo",
            "--duration",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end(), "rtype-inspect: live capture on lo needs root or CAP_NET_RAW (socket: Operation not permitted)");
}

#[test]
fn interfaces_lists_loopback() {
    let out = run(&["interfaces", "--format", "json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lo = list
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["loopback"] == true)
        .expect("a loopback interface");
    assert!(lo["index"].as_u64().unwrap() > 0);
    assert!(
        lo["addresses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a.as_str().unwrap().starts_with("127.")),
        "{lo}"
    );
    let text = String::from_utf8(run(&["interfaces"]).stdout).unwrap();
    assert!(text.contains(lo["name"].as_str().unwrap()), "{text}");
}

/// A SERVER_SNAPSHOT of 60 entities with positions and speeds: about 1.3 KB, 5 KB of JSON.
fn big_snapshot(tick: u32) -> Vec<u8> {
    let mut payload = 60u16.to_be_bytes().to_vec();
    for id in 0..60u32 {
        payload.extend(id.to_be_bytes());
        payload.extend(0x001Eu16.to_be_bytes());
        for v in [1.5f32, 2.5, -0.25, 0.75] {
            payload.extend(v.to_be_bytes());
        }
    }
    rtype_inspect::samplegen::rtype::RtypeBuilder::new(2, 0x14)
        .tick(tick)
        .build(&payload)
        .unwrap()
}

/// With stdout blocked (a pipe nobody reads for a while), the capture still ends at its
/// `--duration`, and its loss is real: the frames captured, the kernel's drops and the frames
/// that arrived in time but could not be decoded add up to what was sent in the capture's time.
/// It ended 2 s late when a blocked stdout stalled the loop, and on lo the kernel's drops were
/// about twice the loss (it counted the sent copies of each packet, which the tool discards).
#[test]
fn blocked_stdout_keeps_the_duration_and_loss_is_real() {
    if !root() {
        return;
    }
    let _lo = lock_lo();
    let duration = 3.0;
    let mut child = Command::new(BIN)
        .args(["live", "-i", "lo", "--format", "json", "--port", "50077"])
        .args(["--duration", &duration.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, stderr) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    let (listening, line) = stderr.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(line.starts_with("listening on lo"), "{line}");
    // Send for 5 s at about 40,000 datagrams a second, nobody reading stdout.
    let server = UdpSocket::bind("127.0.0.1:50077").unwrap();
    let _client = UdpSocket::bind("127.0.0.1:41077").unwrap();
    let mut sent_in_time = 0u64;
    let mut near_the_end = 0u64;
    let end = listening + Duration::from_secs_f64(duration);
    let mut tick = 0;
    while listening.elapsed() < Duration::from_secs(5) {
        for _ in 0..400 {
            server
                .send_to(&big_snapshot(tick), "127.0.0.1:41077")
                .unwrap();
            tick += 1;
            let now = Instant::now();
            if now <= end {
                sent_in_time += 1;
            }
            if now.max(end) - now.min(end) < Duration::from_millis(150) {
                near_the_end += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Now read stdout: the capture must have ended at its deadline.
    let mut out = child.stdout.take().unwrap();
    let reading = Instant::now();
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let status = child.wait().unwrap();
    let stdout = stdout.join().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        reading.elapsed() < Duration::from_secs(5),
        "it ended {:?} after stdout was read",
        reading.elapsed()
    );
    let last = stderr
        .recv_timeout(Duration::from_secs(5))
        .map(|(_, l)| l)
        .unwrap();
    let numbers: Vec<u64> = last
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let (captured, dropped) = (numbers[0], numbers[1]);
    let unread = numbers.get(2).copied().unwrap_or(0);
    eprintln!("{last}; sent {sent_in_time} in the capture's time, {near_the_end} within 150 ms of its end");
    let live = records(&stdout);
    let datagrams = live.iter().filter(|r| r["kind"] == "datagram").count() as u64;
    let summary = live.last().unwrap();
    assert_eq!(summary["kind"], "summary");
    assert_eq!(summary["counts"]["datagrams"], datagrams);
    // The scenario made the kernel drop many.
    assert!(dropped > 5_000, "{last}");
    // Every datagram decoded is one sent before the deadline (ticks count the sends).
    let last_tick = live
        .iter()
        .filter(|r| r["kind"] == "datagram")
        .filter_map(|r| r["header"]["tick"].as_u64())
        .max()
        .unwrap();
    assert!(
        last_tick < sent_in_time + near_the_end,
        "{last_tick} {sent_in_time}"
    );
    // Loss is real: what was captured, dropped or left undecoded is what was sent in time (give
    // or take the packets sent around the deadline, and lo's other traffic).
    let accounted = captured + dropped + unread;
    assert!(
        accounted.abs_diff(sent_in_time) <= near_the_end + 500,
        "{last}: {accounted} accounted for, {sent_in_time} sent"
    );
}
