//! tshark's habits on `packets`: `-T fields -e FIELD… -E …`, compared line for line with tshark
//! running the generated dissector on the real captures (skipped, with a message, when tshark
//! is not on PATH; CI installs it).

#[path = "support/bin.rs"]
mod bin;
#[path = "support/skip.rs"]
mod skip;

use std::process::Command;

use bin::run;

const REAL_17: &str = "tests/fixtures/reference-17byte-1client.pcap";
const REAL_15: &str = "tests/fixtures/reference-15byte-levelevents.pcap";
const RT: &str = "tests/fixtures/rt-two-players.pcap";
const RTNP: &str = "tests/fixtures/rtnp-solo.pcap";

/// Fields both tools give the same values: frame and addresses, every dialect's header fields,
/// repeated fields (snapshot entities, udp.port), floats, bytes, booleans, reassembled snapshots.
const FIELDS: &[&str] = &[
    "frame.number",
    "frame.time_relative",
    "frame.time_delta",
    "frame.time_epoch",
    "frame.len",
    "frame.cap_len",
    "ip.src",
    "ipv6.src",
    "udp.srcport",
    "udp.port",
    "udp.length",
    "rtype.msg_type",
    "rtype.sequence",
    "rtype.compressed",
    "rtype.crc",
    "rtype.payload_len",
    "rtype.payload",
    "rtype.snapshot.entity_count",
    "rtype.snapshot.entity.id",
    "rtype.snapshot.entity.entity_type",
    "rtype.snapshot.entity.pos_x",
    "rtype.reassembled.entity_count",
    "rtype.reassembled.entity.id",
    "rt.sequence_number",
    "rt.reliable",
    "rtnp.type",
    "rtnp.framing",
];

/// tshark's standard output with the generated dissector, or `None` when there is no tshark.
fn tshark(capture: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("tshark")
        .args(["-X", "lua_script:wireshark/rtype.lua", "-r", capture])
        .args(args)
        .output();
    let Ok(out) = out else {
        skip::missing(
            "the tshark comparison",
            "tshark is not on PATH (apt-get install tshark)",
        );
        return None;
    };
    assert!(
        out.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

/// `-e F` for each field.
fn field_args(fields: &[&str]) -> Vec<String> {
    fields
        .iter()
        .flat_map(|f| ["-e".to_string(), f.to_string()])
        .collect()
}

/// Our `-T fields`, read as the dissector reads by default: with the layout each finds.
fn ours(capture: &str, args: &[&str]) -> String {
    let mut all = vec!["packets", capture, "-T", "fields"];
    all.extend(args);
    let (code, out, err) = run(&all);
    assert_eq!(code, 0, "{all:?}: {err}");
    out
}

/// Compares our lines with tshark's, line by line, naming the first that differs.
fn same_lines(what: &str, ours: &str, theirs: &str) {
    assert!(!ours.is_empty(), "{what}: no output");
    for (i, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
        assert_eq!(a, b, "{what}: line {} differs", i + 1);
    }
    assert_eq!(
        ours.lines().count(),
        theirs.lines().count(),
        "{what}: line counts"
    );
}

#[test]
fn fields_equal_tsharks_on_every_real_capture() {
    let fields = field_args(FIELDS);
    let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
    for capture in [REAL_17, RT, RTNP] {
        let mut args = vec!["-2", "-T", "fields"];
        args.extend(&fields);
        let Some(theirs) = tshark(capture, &args) else {
            return;
        };
        same_lines(capture, &ours(capture, &fields), &theirs);
    }
    // The older 15-byte header has no compression bit: the dissector shows no rtype.compressed
    // there, the display filter (and so -e) reads the bit all the same — a difference left open.
    let fields: Vec<&str> = fields
        .chunks(2)
        .filter(|e| e[1] != "rtype.compressed")
        .flatten()
        .copied()
        .collect();
    let mut args = vec!["--profile", "reference-15byte"];
    args.extend(&fields);
    let mut theirs = vec!["-o", "rtype.profile:reference-15byte", "-T", "fields"];
    theirs.extend(&fields);
    same_lines(
        REAL_15,
        &ours(REAL_15, &args),
        &tshark(REAL_15, &theirs).unwrap(),
    );
}

#[test]
fn field_options_and_a_display_filter_equal_tsharks() {
    let fields = field_args(&["frame.number", "rtype.sequence", "rtype.snapshot.entity.id"]);
    let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
    let filter = [
        "-Y",
        "rtype.msg_type == 0x14 && rtype.snapshot.entity_count > 1",
    ];
    for options in [
        &["-E", "separator=,", "-E", "header=y"][..],
        &["-E", "separator=/s", "-E", "aggregator=/s"],
        &["-E", "occurrence=f", "-E", "separator=/t"],
        &["-E", "occurrence=l", "-E", "aggregator=;"],
    ] {
        let mut args: Vec<&str> = filter.to_vec();
        args.extend(options);
        args.extend(&fields);
        let mut theirs = vec!["-2", "-T", "fields"];
        theirs.extend(&args);
        let Some(theirs) = tshark(REAL_17, &theirs) else {
            return;
        };
        let ours = ours(REAL_17, &args);
        assert!(ours.lines().count() > 10, "{options:?}: {ours}");
        same_lines(&format!("{options:?}"), &ours, &theirs);
    }
}

#[test]
fn field_lines_are_exact() {
    let out = ours(
        REAL_17,
        &[
            "-c",
            "12",
            "-Y",
            "rtype.msg_type == 0x14 || frame.number < 3",
            "-E",
            "header=y",
            "-e",
            "frame.number",
            "-e",
            "frame.time_relative",
            "-e",
            "ip.src",
            "-e",
            "udp.srcport",
            "-e",
            "rtype.msg_type",
            "-e",
            "rtype.sequence",
            "-e",
            "rtype.snapshot.entity.id",
            "-e",
            "rtype.snapshot.entity.pos_x",
            "-e",
            "rt.reliable",
        ],
    );
    assert_eq!(
        out,
        "frame.number\tframe.time_relative\tip.src\tudp.srcport\trtype.msg_type\trtype.sequence\t\
         rtype.snapshot.entity.id\trtype.snapshot.entity.pos_x\trt.reliable\n\
         1\t0.000000000\t127.0.0.1\t41000\t0x01\t1\t\t\t\n\
         2\t0.005236000\t127.0.0.1\t49316\t0x10\t1\t\t\t\n\
         12\t0.055258000\t127.0.0.1\t49316\t0x14\t101\t0\t100.6\t\n"
    );
}

#[test]
fn unknown_fields_and_options_are_errors() {
    let (code, out, err) = run(&["packets", REAL_17, "-T", "fields", "-e", "rtype.sequense"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.starts_with(
            "rtype-inspect: -e: rtype.sequense: no such field; did you mean rtype.sequence?"
        ),
        "{err}"
    );
    let (code, _, err) = run(&[
        "packets",
        REAL_17,
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-E",
        "occurrence=x",
    ]);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "rtype-inspect: -E occurrence=x: not one of tshark's values\n"
    );
    let (code, _, err) = run(&["packets", REAL_17, "-e", "frame.number"]);
    assert_eq!(code, 2, "-e needs -T fields: {err}");
    let (code, _, err) = run(&["packets", REAL_17, "-T", "fields"]);
    assert_eq!(code, 2, "-T fields needs -e: {err}");
    let (code, _, err) = run(&[
        "packets",
        REAL_17,
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-V",
    ]);
    assert_eq!(code, 2, "-T fields is not -V: {err}");
}

/// `packets -t FORMAT`'s lines, with TZ set (for `a` and `ad`).
fn packets_lines(capture: &str, args: &[&str], tz: &str) -> String {
    let out = Command::new(bin::BIN)
        .env("TZ", tz)
        .args(["packets", capture])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn time_formats_equal_tsharks() {
    same_times_as_tshark(RT);
}

/// A nanosecond capture's times have nine decimals, as tshark writes them: the real rt capture
/// with nanosecond timestamps (sub-microsecond digits added).
#[test]
fn nanosecond_times_equal_tsharks() {
    let mut pcap = std::fs::read(RT).unwrap();
    assert_eq!(
        pcap[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "a little-endian microsecond pcap"
    );
    pcap[..4].copy_from_slice(&[0x4d, 0x3c, 0xb2, 0xa1]);
    let (mut at, mut frame) = (24, 0u32);
    while at + 16 <= pcap.len() {
        let word = |i: usize| u32::from_le_bytes(pcap[at + i..at + i + 4].try_into().unwrap());
        let nanos = word(4) * 1000 + frame * 137 % 1000;
        let len = word(8) as usize;
        pcap[at + 4..at + 8].copy_from_slice(&nanos.to_le_bytes());
        (at, frame) = (at + 16 + len, frame + 1);
    }
    let path = std::env::temp_dir().join(format!("rtype-ns-{}.pcap", std::process::id()));
    std::fs::write(&path, pcap).unwrap();
    let path = path.to_str().unwrap();
    let ours = packets_lines(path, &["--frames", "2-3"], "UTC");
    assert_eq!(
        ours,
        "      2   0.002016137 #1   S→C rt       23 SERVER_ACCEPT seq=0\n\
         \x20     3   0.002028274 #1   S→C rt       28 ENTITY_SPAWN seq=1 entity=10000 type=1(player)\n\
         \x20     2               #1   finding [rt.reliable.unacknowledged] 760 of 760 RELIABLE \
         packets never acknowledged\n\
         \x20     3               #1   finding [session.entity-never-destroyed] 8 entities still \
         alive at the end\n"
    );
    same_times_as_tshark(path);
    let _ = std::fs::remove_file(path);
}

fn same_times_as_tshark(capture: &str) {
    // Every other datagram of one side, so that d (previous read) and dd (previous shown) differ.
    let filter = "frame.number > 5 && frame.number < 400 && rt.reliable == 1";
    for tz in ["UTC", "Asia/Kolkata"] {
        for t in ["a", "ad", "r", "d", "dd", "e"] {
            let ours = packets_lines(capture, &["-t", t, "-Y", filter], tz);
            let out = Command::new("tshark")
                .env("TZ", tz)
                .args([
                    "-X",
                    "lua_script:wireshark/rtype.lua",
                    "-r",
                    capture,
                    "-t",
                    t,
                    "-Y",
                    filter,
                ])
                .output();
            let Ok(out) = out else {
                skip::missing(
                    "the tshark comparison",
                    "tshark is not on PATH (apt-get install tshark)",
                );
                return;
            };
            let theirs = String::from_utf8(out.stdout).unwrap();
            // The frame number and the time (two words with the date).
            let words = if t == "ad" { 3 } else { 2 };
            // Findings of no single datagram have no time, and tshark has no such lines.
            let times = |text: &str| -> Vec<String> {
                text.lines()
                    .filter(|l| !l.contains(" finding ["))
                    .map(|l| {
                        l.split_whitespace()
                            .take(words)
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .collect()
            };
            assert!(ours.lines().count() > 10);
            assert_eq!(times(&ours), times(&theirs), "-t {t}, TZ={tz}");
        }
    }
}

#[test]
fn time_format_lines_are_exact() {
    let lines = |t: &str| packets_lines(RT, &["-t", t, "--frames", "2-4"], "UTC");
    assert_eq!(
        lines("ad"),
        "      2 2026-11-22 05:28:28.443701 #1   S→C rt       23 SERVER_ACCEPT seq=0\n\
         \x20     3 2026-11-22 05:28:28.443713 #1   S→C rt       28 ENTITY_SPAWN seq=1 entity=10000 type=1(player)\n\
         \x20     4 2026-11-22 05:28:28.453321 #1   S→C rt       26 TRANSFORM_SNAPSHOT seq=1 entities=1 \
         [rt.snapshot.no-world-tick]\n\
         \x20     2            #1   finding [rt.reliable.unacknowledged] 760 of 760 RELIABLE \
         packets never acknowledged\n\
         \x20     3            #1   finding [session.entity-never-destroyed] 8 entities still \
         alive at the end\n"
    );
    assert!(lines("a").starts_with("      2 05:28:28.443701 #1   S→C rt       23 SERVER_ACCEPT"));
    assert!(lines("e").starts_with("      2 1795325308.443701 #1   S→C"));
    assert!(lines("r").starts_with("      2   0.002016 #1   S→C"));
    assert!(lines("d").starts_with("      2   0.002016 #1   S→C"));
    // The first shown has no previous shown.
    assert!(lines("dd").starts_with("      2   0.000000 #1   S→C"));
    assert_eq!(lines("r"), packets_lines(RT, &["--frames", "2-4"], "UTC"));
}
