//! tshark's habits on `packets`: `-T fields -e FIELD… -E …`, compared line for line with tshark
//! running the generated dissector on the real captures (skipped, with a message, when tshark
//! is not on PATH; CI installs it).

#[path = "support/bin.rs"]
mod bin;

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
    "ip.src",
    "ipv6.src",
    "udp.srcport",
    "udp.port",
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
        eprintln!("skipping the tshark comparison: tshark is not on PATH (apt-get install tshark)");
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
         12\t0.055258000\t127.0.0.1\t49316\t0x14\t101\t0\t1.3992e-36\t\n"
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
