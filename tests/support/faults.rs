//! Faults injected into real captures: a datagram's bytes changed in place, for the tests that
//! hold the CLI and the dissector to judging every datagram of a recognised conversation
//! (tests/recognition.rs, tests/lua_dissector.rs).
#![allow(dead_code)]

use std::collections::BTreeMap;

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
