//! Broken pcapng blocks, made by hand: each said in words, as tshark says it, the same sentence in
//! the summary and in every list of findings; a frame named only when a packet's block is where
//! reading stopped; an Enhanced Packet Block too short for its packet a finding at its frame,
//! reading going on after it.

#[path = "support/bin.rs"]
mod bin;

use std::path::PathBuf;

use bin::run;
use serde_json::Value;

/// A little-endian pcapng file, block by block.
#[derive(Default)]
struct Ng(Vec<u8>);

impl Ng {
    /// A section header, then an Ethernet interface.
    fn new() -> Ng {
        let mut ng = Ng::default();
        ng.block(
            0x0a0d_0d0a,
            &[&0x1a2b_3c4du32.to_le_bytes()[..], &[1, 0, 0, 0], &[0xff; 8]].concat(),
        );
        ng.block(1, &[1, 0, 0, 0, 0xff, 0xff, 0, 0]);
        ng
    }

    /// A block with its two lengths.
    fn block(&mut self, kind: u32, body: &[u8]) -> &mut Ng {
        let len = 12 + body.len() as u32;
        self.raw(kind, len, body, len)
    }

    /// A block with the lengths given.
    fn raw(&mut self, kind: u32, lead: u32, body: &[u8], trail: u32) -> &mut Ng {
        self.0.extend(kind.to_le_bytes());
        self.0.extend(lead.to_le_bytes());
        self.0.extend(body);
        self.0.extend(trail.to_le_bytes());
        self
    }

    /// An Enhanced Packet Block's body on interface 0 holding `packet`, which says it captured
    /// `caplen` bytes.
    fn epb(packet: &[u8], caplen: u32) -> Vec<u8> {
        let mut body = [0, 0, 0, caplen, packet.len() as u32]
            .map(u32::to_le_bytes)
            .concat();
        body.extend(packet);
        body.resize(body.len().div_ceil(4) * 4, 0);
        body
    }

    fn packet(&mut self) -> &mut Ng {
        let frame = frame();
        self.block(6, &Ng::epb(&frame, frame.len() as u32))
    }

    fn write(&self, name: &str) -> String {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pcapng-blocks");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, &self.0).unwrap();
        path.display().to_string()
    }
}

/// An Ethernet frame with an IPv4 header and no more: 34 bytes, not UDP.
fn frame() -> Vec<u8> {
    let mut f = vec![0u8; 34];
    f[12..15].copy_from_slice(&[0x08, 0x00, 0x45]);
    f
}

/// The length of a packet block of [`frame`].
const EPB_LEN: u32 = 32 + 36;

/// The summary's first line.
fn headline(file: &str) -> String {
    let (code, out, err) = run(&[file]);
    assert_eq!(code, 0, "{err}");
    out.lines().next().unwrap().to_owned()
}

/// The capture.* findings `packets -V` lists, as they read after the frame number.
fn listed(file: &str) -> Vec<String> {
    let (code, out, err) = run(&["packets", "-V", file]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .filter(|l| l.contains("finding [capture."))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn a_broken_block_is_said_in_words_without_naming_a_frame_that_is_not_there() {
    let cases: [(&str, Ng, &str); 4] = [
        (
            "short-idb.pcapng",
            {
                let mut ng = Ng::new();
                ng.0.truncate(28);
                ng.raw(1, 8, &[0; 8], 8);
                ng
            },
            "pcapng (no interface), 0 frames over 0.000 s, CORRUPT at byte offset 28: \
             block total length 8 is shorter than the 12-byte minimum",
        ),
        (
            "trailing.pcapng",
            {
                let mut ng = Ng::new();
                let frame = frame();
                ng.packet()
                    .raw(6, EPB_LEN, &Ng::epb(&frame, 34), EPB_LEN + 4);
                ng.packet();
                ng
            },
            "pcapng (ethernet), 1 frames over 0.000 s, CORRUPT at frame 2 (byte offset 116): \
             the trailing block length 72 differs from the leading 68",
        ),
        (
            "not-multiple.pcapng",
            {
                let mut ng = Ng::new();
                ng.packet().raw(5, 45, &[0; 33], 45);
                ng
            },
            "pcapng (ethernet), 1 frames over 0.000 s, CORRUPT at byte offset 116: \
             block total length 45 is not a multiple of 4",
        ),
        (
            "second-section.pcapng",
            {
                let mut ng = Ng::new();
                ng.packet();
                // A second section whose lengths disagree.
                let body = [&0x1a2b_3c4du32.to_le_bytes()[..], &[1, 0, 0, 0], &[0xff; 8]].concat();
                ng.raw(0x0a0d_0d0a, 28, &body, 32);
                ng
            },
            "pcapng (ethernet), 1 frames over 0.000 s, CORRUPT at byte offset 116: \
             the trailing block length 32 differs from the leading 28",
        ),
    ];
    for (name, ng, said) in cases {
        let file = ng.write(name);
        assert_eq!(headline(&file), format!("{file}: {said}"));
        // The same sentence in every list of findings, at the last frame read when no packet's
        // block is where reading stopped.
        let (rule, reason) = said.split_once(": ").unwrap();
        let frames = rule.split(", ").nth(1).unwrap().split(' ').next().unwrap();
        let at = rule
            .rsplit("byte offset ")
            .next()
            .unwrap()
            .trim_end_matches(')');
        let frame = match rule.contains("at frame") {
            true => rule
                .split("at frame ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap(),
            false => frames,
        };
        let line = format!(
            "{frame} #0 finding [capture.corrupt] at byte offset {at} of the file: {reason}"
        );
        let corrupt: Vec<String> = listed(&file)
            .into_iter()
            .filter(|l| l.contains("[capture.corrupt]"))
            .collect();
        assert_eq!(corrupt, [line], "{name}");
        let (_, out, _) = run(&["export", &file, "-o", "-"]);
        let details: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["id"] == "capture.corrupt")
            .map(|r| r["detail"].clone())
            .collect();
        let detail = format!("at byte offset {at} of the file: {reason}");
        assert_eq!(details, [Value::from(detail)], "{name}");
        let (_, out, _) = run(&["--format", "json", &file]);
        let doc: Value = serde_json::from_str(&out).unwrap();
        let frame_json = match rule.contains("at frame") {
            true => Value::from(frame.parse::<u64>().unwrap()),
            false => Value::Null,
        };
        assert_eq!(doc["capture"]["truncated"]["frame"], frame_json, "{name}");
    }
}

#[test]
fn a_section_header_in_words_when_the_file_starts_with_a_broken_one() {
    let mut ng = Ng::default();
    let body = [&0x1a2b_3c4du32.to_le_bytes()[..], &[1, 0, 0, 0], &[0xff; 8]].concat();
    ng.raw(0x0a0d_0d0a, 28, &body, 40);
    ng.block(1, &[1, 0, 0, 0, 0xff, 0xff, 0, 0]);
    let file = ng.write("first-section.pcapng");
    let (code, _, err) = run(&[&file]);
    assert_eq!(
        (code, err.trim()),
        (
            2,
            format!(
                "rtype-inspect: {file}: not a capture file: a pcapng section header block, but \
                 the trailing block length 40 differs from the leading 28"
            )
            .as_str()
        )
    );
}

#[test]
fn a_packet_longer_than_its_block_is_a_finding_at_its_frame_and_reading_goes_on() {
    let mut ng = Ng::new();
    let frame = frame();
    ng.packet().block(6, &Ng::epb(&frame, 200)).packet();
    let file = ng.write("caplen.pcapng");
    assert_eq!(
        headline(&file),
        format!("{file}: pcapng (ethernet), 2 frames over 0.000 s, complete")
    );
    assert_eq!(
        listed(&file),
        [
            "2 #0 finding [capture.packet-exceeds-block] a 200-byte packet in a block with \
             room for 36 bytes",
            "2 #0 finding [capture.no-datagrams]",
        ]
    );
    let (code, out, _) = run(&["check", "--format", "json", "--fail-on", "warning", &file]);
    assert_eq!(code, 1);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let found: Vec<(&str, &Value, &Value)> = doc["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["id"].as_str().unwrap(), &f["count"], &f["frames"]))
        .collect();
    assert_eq!(
        found,
        [
            ("capture.no-datagrams", &1.into(), &serde_json::json!([2])),
            (
                "capture.packet-exceeds-block",
                &1.into(),
                &serde_json::json!([2])
            ),
        ]
    );
}

/// A version no reader knows is refused, as tshark and libpcap refuse it (libpcap's test files
/// pcap-invalid-version-1.pcap, pcapng-invalid-vers-1.pcapng and -2.pcapng).
#[test]
fn a_version_no_reader_knows_is_refused() {
    let pcap = |major: u16, minor: u16| {
        let mut head = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
        head.extend([major, minor].map(u16::to_le_bytes).concat());
        head.extend([0, 0, 65535, 1].map(u32::to_le_bytes).concat());
        head
    };
    let ng = |major: u8, minor: u8| {
        let mut ng = Ng::default();
        let body = [
            &0x1a2b_3c4du32.to_le_bytes()[..],
            &[major, 0, minor, 0],
            &[0xff; 8],
        ]
        .concat();
        ng.block(0x0a0d_0d0a, &body);
        ng.0
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pcapng-blocks");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes, refused) in [
        ("version-1.4.pcap", pcap(1, 4), Some("a pcap file of version 1.4, which no reader knows (pcap files are version 2)")),
        ("version-2.5.pcap", pcap(2, 5), None),
        ("version-0.1.pcapng", ng(0, 1), Some("a pcapng section of version 0.1, which no reader knows (1.0, or 1.2 as some writers put it)")),
        ("version-1.1.pcapng", ng(1, 1), Some("a pcapng section of version 1.1, which no reader knows (1.0, or 1.2 as some writers put it)")),
        ("version-1.2.pcapng", ng(1, 2), None),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let file = path.display().to_string();
        let (code, out, err) = run(&[&file]);
        match refused {
            Some(words) => assert_eq!(
                (code, err.trim()),
                (2, format!("rtype-inspect: {file}: not a capture file: {words}").as_str())
            ),
            None => assert!(out.starts_with(&format!("{file}: pcap")), "{name}: {out}{err}"),
        }
    }
}
