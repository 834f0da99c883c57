//! Faults injected into real captures: a datagram's bytes changed in place, for the tests that
//! hold the CLI and the dissector to judging every datagram of a recognised conversation
//! (tests/recognition.rs, tests/lua_dissector.rs).
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde_json::Value;

/// A little-endian µs pcap's records: (timestamp µs, offset of the frame's bytes, length).
pub fn records(pcap: &[u8]) -> Vec<(u64, usize, usize)> {
    assert_eq!(
        &pcap[..4],
        &[0xD4, 0xC3, 0xB2, 0xA1],
        "little-endian µs pcap"
    );
    let u32_at = |at: usize| u32::from_le_bytes(pcap[at..at + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let ts = u64::from(u32_at(at)) * 1_000_000 + u64::from(u32_at(at + 4));
        let len = u32_at(at + 8) as usize;
        out.push((ts, at + 16, len));
        at += 16 + len;
    }
    out
}

/// Where the UDP payload of an Ethernet/IPv4/UDP frame starts.
pub fn udp_payload_at(frame: &[u8]) -> usize {
    14 + usize::from(frame[14] & 0x0F) * 4 + 8
}

/// `pcap` with `count` UDP payloads (every `step`th record from index `from`) changed by `fault`
/// (given the fault's number), and the frame number of each fault with its number.
pub fn inject(
    pcap: &[u8],
    from: usize,
    step: usize,
    count: usize,
    fault: impl Fn(usize, &mut [u8]),
) -> (Vec<u8>, BTreeMap<u64, usize>) {
    let mut faulty = pcap.to_vec();
    let mut broken = BTreeMap::new();
    let recs = records(pcap);
    for (n, index) in (from..recs.len()).step_by(step).take(count).enumerate() {
        let (_, at, len) = recs[index];
        let frame = &mut faulty[at..at + len];
        let payload_at = udp_payload_at(frame);
        fault(n, &mut frame[payload_at..]);
        broken.insert(index as u64 + 1, n);
    }
    assert_eq!(broken.len(), count);
    (faulty, broken)
}

/// Findings per frame of an export: frame → sorted IDs of the datagrams' violations, and of the
/// findings reported on their own when `loose`.
pub fn findings_by_frame(ndjson: &str, loose: bool) -> BTreeMap<u64, Vec<String>> {
    let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for line in ndjson.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        let frame = r["frame"].as_u64();
        let ids: Vec<String> = match r["kind"].as_str() {
            Some("datagram") => r["violations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["id"].as_str().unwrap().to_owned())
                .collect(),
            Some("finding") if loose => vec![r["id"].as_str().unwrap().to_owned()],
            _ => continue,
        };
        let at = out.entry(frame.unwrap()).or_default();
        at.extend(ids);
        at.sort();
    }
    out
}

/// `pcap` (a little-endian µs pcap) rewritten record by record: `edit` gets each record's index
/// and frame bytes and returns the frames to write in its place (none, itself, changed, or with
/// copies), each 1 µs after the previous one written at that place. A cut last record is kept
/// as it is.
pub fn rewrite(pcap: &[u8], mut edit: impl FnMut(usize, &[u8]) -> Vec<Vec<u8>>) -> Vec<u8> {
    let mut out = pcap[..24].to_vec();
    let mut end = 24;
    for (index, (ts, at, len)) in records(pcap).into_iter().enumerate() {
        let Some(bytes) = pcap.get(at..at + len) else {
            break;
        };
        end = at + len;
        for (n, frame) in edit(index, bytes).iter().enumerate() {
            let ts = ts + n as u64;
            out.extend(((ts / 1_000_000) as u32).to_le_bytes());
            out.extend(((ts % 1_000_000) as u32).to_le_bytes());
            out.extend((frame.len() as u32).to_le_bytes());
            out.extend((frame.len() as u32).to_le_bytes());
            out.extend(frame);
        }
    }
    // A capture cut in a record stays cut there.
    out.extend_from_slice(&pcap[end..]);
    out
}

/// An Ethernet/IPv4/UDP frame with its UDP payload cut by `cut` bytes, the IP and UDP lengths
/// (and the IP header checksum) made right: a datagram sent short, not a broken frame.
pub fn shortened(frame: &[u8], cut: usize) -> Vec<u8> {
    let at = udp_payload_at(frame);
    with_payload(frame, &frame[at..frame.len() - cut])
}

/// An Ethernet/IPv4/UDP frame carrying `payload` instead of its own, the IP and UDP lengths and
/// the IP header checksum made right (the UDP checksum left out, as IPv4 allows).
pub fn with_payload(frame: &[u8], payload: &[u8]) -> Vec<u8> {
    let at = udp_payload_at(frame);
    let mut f = frame[..at].to_vec();
    f.extend_from_slice(payload);
    let ip = 14;
    let ihl = usize::from(f[ip] & 0x0F) * 4;
    let ip_len = (ihl + 8 + payload.len()) as u16;
    f[ip + 2..ip + 4].copy_from_slice(&ip_len.to_be_bytes());
    let udp = ip + ihl;
    f[udp + 4..udp + 6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f[udp + 6..udp + 8].copy_from_slice(&[0, 0]);
    f[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    let sum: u32 = f[ip..ip + ihl]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let folded = (sum & 0xFFFF) + (sum >> 16);
    let folded = (folded & 0xFFFF) + (folded >> 16);
    f[ip + 10..ip + 12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
    f
}
