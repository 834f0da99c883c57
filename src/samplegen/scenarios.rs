//! The named sample captures: a clean session, one capture per violation family, and a few that
//! exercise the capture layer (old header, truncation, pcapng link types, gzip).
//!
//! Each scenario is a script over [`Script`]; it states the findings it injects as it injects
//! them, and those become `NAME.expected.txt` (never the decoder's output, so the two can be
//! compared).

use std::fs;
use std::io;
use std::path::Path;

use super::pcap::{gzip, udp_frame, Link, PcapWriter, PcapngWriter};
use super::script::{invalid, Client, Expected, Record, Script};
use super::{clean, violations};
use crate::app::write_file;
use crate::proto::Rule;

/// How a scenario's datagrams become a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// Legacy pcap, Ethernet frames.
    Pcap,
    /// The same, gzipped.
    PcapGz,
    /// The same, cut in the middle of the last record.
    PcapCut,
    /// pcapng with an Ethernet (802.1Q-tagged) and a raw IPv4 interface.
    Pcapng,
}

/// A named sample capture.
pub struct Scenario {
    pub name: &'static str,
    /// File name in the samples directory.
    pub file: &'static str,
    /// One line on what the sample holds.
    pub summary: &'static str,
    script: fn(&mut Script) -> io::Result<()>,
    format: Format,
}

/// A generated sample: the file's bytes and what decoding it must report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub bytes: Vec<u8>,
    pub expected: Expected,
    /// Datagrams written (the cut one included for a truncated capture).
    pub datagrams: u64,
}

const ALL: &[Scenario] = &[
    Scenario {
        name: "clean-session",
        file: "clean-session.pcap",
        summary: "two players from HELLO to DISCONNECT, a third client denied, kicked and banned, ~2 s of \
                  60 Hz play: every message type but 0x31; decodes with zero findings",
        script: clean::clean_session_full,
        format: Format::Pcap,
    },
    Scenario {
        name: "clean-session-gz",
        file: "clean-session.pcap.gz",
        summary: "a short clean session (0.5 s of play), gzipped; zero findings",
        script: clean::clean_session_short,
        format: Format::PcapGz,
    },
    Scenario {
        name: "violations-crc",
        file: "violations-crc.pcap",
        summary: "corrupt CRC footers, Payload Len disagreeing with the size, a short datagram, bad versions, \
                  bad packet types",
        script: violations::violations_crc,
        format: Format::Pcap,
    },
    Scenario {
        name: "violations-compression",
        file: "violations-compression.pcap",
        summary: "compression of a payload of 64 bytes or less, compression that is not smaller, Orig. Size on \
                  an uncompressed payload, bytes that are not LZ4, a wrong Orig. Size",
        script: violations::violations_compression,
        format: Format::Pcap,
    },
    Scenario {
        name: "violations-messages",
        file: "violations-messages.pcap",
        summary: "unknown message type, wrong direction, truncated field, trailing bytes, wrong fixed size, \
                  non-finite CLIENT_INPUT floats, unused input bits, non-UTF-8 text, unknown reason code, \
                  LevelTransition sent, unknown LevelEvent type, unsorted keyframes",
        script: violations::violations_messages,
        format: Format::Pcap,
    },
    Scenario {
        name: "violations-snapshot",
        file: "violations-snapshot.pcap",
        summary: "snapshots whose masks set reserved bits 7 and 8 and undefined bits 10 and 12",
        script: violations::violations_snapshot,
        format: Format::Pcap,
    },
    Scenario {
        name: "violations-chunks",
        file: "violations-chunks.pcap",
        summary: "chunk sets: totalChunks disagreeing within a tick, a duplicate chunk, chunkIndex >= \
                  totalChunks, totalChunks 0, a set missing a chunk (and complete sets around them)",
        script: violations::violations_chunks,
        format: Format::Pcap,
    },
    Scenario {
        name: "old-header",
        file: "old-header.pcap",
        summary: "a short clean session with the older 15-byte header on every datagram",
        script: clean::old_header,
        format: Format::Pcap,
    },
    Scenario {
        name: "truncated",
        file: "truncated.pcap",
        summary: "a short clean session whose file is cut in the middle of its last record",
        script: clean::clean_session_short,
        format: Format::PcapCut,
    },
    Scenario {
        name: "mixed-desktop",
        file: "mixed-desktop.pcap",
        summary: "the short clean session among a desktop's ordinary UDP (DNS, mDNS, SSDP, QUIC, a JSON \
                  broadcast, text starting \"RT\", zeros, a lone rtype magic...), 51 datagrams none of \
                  which is judged; zero findings",
        script: clean::mixed_desktop,
        format: Format::Pcap,
    },
    Scenario {
        name: "link-variety",
        file: "link-variety.pcapng",
        summary: "pcapng, two interfaces: Ethernet with an 802.1Q tag (VLAN 42) and raw IPv4 (player 2's \
                  traffic), plus one IPv6 datagram; a short clean session, zero findings",
        script: clean::link_variety,
        format: Format::Pcapng,
    },
];

/// The names of every scenario, in the order [`write_all`] writes them.
pub const SCENARIOS: &[&str] = &[
    "clean-session",
    "clean-session-gz",
    "violations-crc",
    "violations-compression",
    "violations-messages",
    "violations-snapshot",
    "violations-chunks",
    "old-header",
    "truncated",
    "mixed-desktop",
    "link-variety",
];

/// The scenario called `name`.
pub fn scenario(name: &str) -> Option<&'static Scenario> {
    ALL.iter().find(|s| s.name == name)
}

/// Writes every sample, its expected findings and the samples README into `dir`.
pub fn write_all(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let mut rows = Vec::new();
    for s in ALL {
        rows.push((s, s.write(dir)?));
    }
    super::rt::write(dir)?;
    super::rtnp::write(dir)?;
    write_file(&dir.join("README.md"), readme(&rows).as_bytes())
}

impl Scenario {
    /// The name of the expected-findings file written beside the sample.
    pub fn expected_file(&self) -> String {
        format!("{}.expected.txt", self.name)
    }

    /// Runs the script, keeping the datagrams in memory (samples are small).
    pub fn records(&self) -> io::Result<(Vec<Record>, Expected)> {
        let mut records = Vec::new();
        let mut script = Script::new(&mut records);
        (self.script)(&mut script)?;
        let expected = script.expected().clone();
        Ok((records, expected))
    }

    /// Generates the sample's file bytes and expected findings.
    pub fn generate(&self) -> io::Result<Sample> {
        let (records, mut expected) = self.records()?;
        let datagrams = records.len() as u64;
        let bytes = match self.format {
            Format::Pcap => pcap_bytes(&records)?,
            Format::PcapGz => gzip(&pcap_bytes(&records)?)?,
            Format::PcapCut => {
                let mut bytes = pcap_bytes(&records)?;
                let last = records.last().ok_or_else(|| invalid("nothing to cut"))?;
                let last_frame = udp_frame(Link::Ethernet, last.from, last.to, &last.bytes)?;
                bytes.truncate(bytes.len() - last_frame.len() / 2);
                *expected.entry(Rule::CaptureTruncated.id()).or_default() += 1;
                bytes
            }
            Format::Pcapng => pcapng_bytes(&records)?,
        };
        Ok(Sample {
            bytes,
            expected,
            datagrams,
        })
    }

    /// Writes the sample and `NAME.expected.txt` into `dir`.
    pub fn write(&self, dir: &Path) -> io::Result<Sample> {
        let sample = self.generate()?;
        write_file(&dir.join(self.file), &sample.bytes)?;
        write_file(
            &dir.join(self.expected_file()),
            expected_text(&sample.expected).as_bytes(),
        )?;
        Ok(sample)
    }
}

/// Expected findings as lines `RULE_ID COUNT`, sorted by rule id.
pub fn expected_text(expected: &Expected) -> String {
    expected
        .iter()
        .map(|(id, n)| format!("{id} {n}\n"))
        .collect()
}

fn pcap_bytes(records: &[Record]) -> io::Result<Vec<u8>> {
    let mut w = PcapWriter::new(Vec::new(), Link::Ethernet.linktype())?;
    for r in records {
        w.record(r.ts_us, &udp_frame(Link::Ethernet, r.from, r.to, &r.bytes)?)?;
    }
    w.finish()
}

/// Player 2's traffic goes over the raw IPv4 interface, the rest over tagged Ethernet.
fn pcapng_bytes(records: &[Record]) -> io::Result<Vec<u8>> {
    let links = [Link::EthernetVlan(42), Link::RawIpv4];
    let raw_host = Client::numbered(1)?.addr.ip();
    let mut w = PcapngWriter::new(Vec::new(), &links.map(Link::linktype))?;
    for r in records {
        let interface = usize::from(r.from.ip() == raw_host || r.to.ip() == raw_host);
        w.packet(
            interface as u32,
            r.ts_us,
            &udp_frame(links[interface], r.from, r.to, &r.bytes)?,
        )?;
    }
    w.finish()
}

fn readme(rows: &[(&Scenario, Sample)]) -> String {
    let mut text = String::from(README_HEAD);
    for (s, sample) in rows {
        let findings = if sample.expected.is_empty() {
            "none".to_string()
        } else {
            sample
                .expected
                .iter()
                .map(|(id, n)| format!("`{id}` {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let summary = s.summary.split_whitespace().collect::<Vec<_>>().join(" ");
        text += &format!(
            "| `{}` | {} | {} | {} |\n",
            s.file, summary, sample.datagrams, findings
        );
    }
    text + README_TAIL
}

const README_HEAD: &str = "# Sample captures

Deterministic captures of the three dialects, written by `src/samplegen`: the `rtype` samples
below (documents 002 and 001), and the `rt` (document 003) and `rtnp` (document 004) samples
listed after them. Every file is generated: do not edit it by hand. To regenerate them all (byte
for byte the same on every run):

```sh
cargo run --release -- generate --all samples/
```

Each `NAME.expected.txt` lists the findings decoding the sample must report, one `RULE_ID COUNT`
per line, sorted by rule id; the generator writes it from what it injected, not from the decoder.
An empty file means zero findings.

| file | what it holds | datagrams | expected findings |
| --- | --- | --- | --- |
";

const README_TAIL: &str = "
| `rt-big-endian.pcap` | an rt session byte for byte as document 003 says (big-endian, magic `52 54`) | | see its `.expected.txt` |
| `rt-little-endian.pcap` | the same session as the real server sends it (little-endian `54 52`, spec-notes B variants) | | see its `.expected.txt` |
| `rtnp-envelope.pcap` | an rtnp session in Cap'n Proto envelopes, as document 004 says | | see its `.expected.txt` |
| `rtnp-raw-json.pcap` | the same session as raw JSON datagrams | | see its `.expected.txt` |
| `rtnp-fragmented.pcap` | 8 KiB snapshots in IPv4 fragments, and one over the 8192-byte limit | | see its `.expected.txt` |

Common to the rtype samples: the clock starts at 2026-01-01T00:00:00Z and advances at 60 Hz; clients
`10.0.0.X:4100X` send to the server at `10.0.0.1:50010`, which answers from `10.0.0.1:49316`
(as real servers do). Client packets have packet type 0x01, the server's 0x02. Sequence numbers:
per client, growing; server replies echo the client's, snapshots carry the tick, chunks tick +
chunkIndex, the rest 0. Snapshot masks use bits 0-6 and 9 only, except where a violation says
otherwise. LevelInit announces typeIds 1-4, and every entityType sent is one of them.

Chunk-set conventions behind `violations-chunks.expected.txt` (a set is one conversation's
chunks of one header tick): a chunk whose totalChunks differs from the first chunk of its set is
reported, and the set is discarded, so it is never reported missing; a chunk with totalChunks 0
is reported as `rtype.chunk.total-zero` only, and a chunk with chunkIndex >= totalChunks as
`rtype.chunk.index-out-of-range` only: neither joins a set; a chunk index seen again in an open
set is a duplicate; a set still incomplete at the end of the capture is reported missing once.

`generate_large` (for benchmarks) writes a bigger capture of the same kind on demand; it is not
kept here.
";
