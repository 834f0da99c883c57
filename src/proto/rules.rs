//! The catalog of rules traffic can break: a stable ID, a severity, the document's section and a
//! one-line explanation each. The capture's, the sessions' and the budgets' are declared here,
//! each bundled dialect's in its description (`dialects/*.yaml`, spliced in by build.rs);
//! `rtype-inspect violations`, docs/violations.md's list, the JSON output and the Lua
//! dissector's expert infos all read this table.

use serde::Serialize;

/// How bad breaking a rule is: error for a broken MUST, warning for a broken SHOULD, info for
/// notable facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub const fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        match s {
            "info" => Some(Severity::Info),
            "warning" => Some(Severity::Warning),
            "error" => Some(Severity::Error),
            _ => None,
        }
    }
}

/// Everything the catalog says about one rule.
#[derive(Debug, Serialize)]
pub struct RuleInfo {
    pub id: &'static str,
    pub severity: Severity,
    /// Document and section, e.g. `002 §8`.
    pub section: &'static str,
    pub summary: &'static str,
}

macro_rules! rules {
    ($($variant:ident = $id:literal, $sev:ident, $section:literal, $summary:literal;)*) => {
        /// The catalog's order, which numbers the rules.
        #[allow(clippy::enum_variant_names)]
        #[repr(u16)]
        enum Index { $($variant),* }

        /// Every rule of the catalog, in order.
        pub const CATALOG: &[RuleInfo] = &[
            $(RuleInfo { id: $id, severity: Severity::$sev, section: $section, summary: $summary }),*
        ];

        #[allow(non_upper_case_globals)]
        impl Rule {
            $(pub const $variant: Rule = Rule(Index::$variant as u16);)*
            /// The catalog's rules (a described dialect's come after them: [`Rule::all`]).
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];
        }
    };
}

/// A rule: the catalog's, by the constant code uses (`Rule::RtypeCrcMismatch`), or one a
/// dialect description declares, numbered after the catalog when the description loads.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rule(u16);

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// The rules of the described dialects loaded in this run, registered once before any capture
/// is read.
struct Described {
    infos: Vec<RuleInfo>,
    all: Vec<Rule>,
}

static DESCRIBED: std::sync::OnceLock<Described> = std::sync::OnceLock::new();

include!(concat!(env!("OUT_DIR"), "/rules.rs"));

// The capture's rules, the bundled dialects', then the sessions' and the budgets'.
with_dialect_rules! { rules
{
    // Capture layer.
    CaptureTruncated = "capture.truncated", Error, "pcap",
        "the capture file ends in the middle of a record; everything before the cut was decoded";
    CaptureCorrupt = "capture.corrupt", Error, "pcap",
        "the capture file is corrupt from a record on (a length no capture can have, contents that contradict the format, gzip data that fails its checks); everything before it was decoded";
    CaptureMalformedPacket = "capture.malformed-packet", Warning, "pcap",
        "a frame's link, IP or UDP header is malformed; the frame was skipped";
    CaptureSnaplen = "capture.snaplen", Warning, "pcap",
        "a datagram was cut short by the capture's snapshot length";
    CaptureFragmentDropped = "capture.fragment-dropped", Warning, "pcap",
        "IP fragments were dropped (limit reached, overlap or expiry, or still incomplete when the capture ends) before reassembly";
    CaptureBlockSkipped = "capture.block-skipped", Warning, "pcap",
        "a pcapng block whose contents contradict its length or the format (its length agrees at both ends) was skipped; reading went on after it";
    CaptureNoDatagrams = "capture.no-datagrams", Error, "pcap",
        "the capture holds no datagram of any dialect (empty, an unsupported link type, other traffic, the wrong port): nothing was judged, so a check of it cannot pass";
    CaptureOversizedRecord = "capture.oversized-record", Warning, "pcap",
        "a pcap record is longer than the file header's snaplen (a host with GRO/TSO, a capture taken with a small -s); it was read whole, as libpcap reads it, up to 262144 bytes";
    CaptureUndescribedInterface = "capture.undescribed-interface", Warning, "pcap",
        "a pcapng packet names an interface its section never described, so its link type is unknown; the packet was not decoded (tshark refuses the file there)";
    CapturePacketExceedsBlock = "capture.packet-exceeds-block", Warning, "pcap",
        "a pcapng Enhanced Packet Block's captured length runs past its block; the packet was skipped and reading went on after it (tshark refuses the file there)";
}
{
    // Sessions (src/session/analysis.rs), judged per conversation.
    SessionHandshakeOrder = "session.handshake-order", Warning, "002 §5",
        "a message came before the handshake step it needs (e.g. CLIENT_INPUT before JOIN_ACCEPT, SNAPSHOT before GAME_START)";
    SessionLevelInitUnacknowledged = "session.levelinit-unacknowledged", Warning, "spec-notes A, 001 §9",
        "LevelInit was never acknowledged (CLIENT_ACKNOWLEDGE with messageType 0x30) within the capture";
    SessionLevelInitNotRetried = "session.levelinit-not-retried", Warning, "001 §9",
        "LevelInit went unacknowledged and was not sent again; it SHOULD be retried until acknowledged";
    SessionTickBackwards = "session.tick-backwards", Warning, "002 §3, 001 §4",
        "a snapshot's tick is below one already seen in the conversation (reordered, or the tick restarted)";
    SessionSnapshotRate = "session.snapshot-rate", Warning, "002 §6.1",
        "snapshot rate far from nominal (default 60 Hz ± 20 %, judged from 20 snapshot ticks; each stream of a dialect with several, such as rt's component snapshots)";
    SessionSnapshotStall = "session.snapshot-stall", Warning, "002 §6.1, 003 Component Snapshots, 004 §7.2",
        "a periodic stream went silent for over stall_multiple (default 3) of its periods (its mean interval, at least nominal; from its 20th datagram); at the first datagram after the gap";
    SessionStreamStopped = "session.stream-stopped", Warning, "002 §6.1, 003 Component Snapshots, 004 §7.2",
        "a periodic stream (snapshots of one kind) stopped while the conversation went on: its last datagram came over a second, and over 10 of its periods, before the conversation's end";
    SessionAfterDisconnect = "session.after-disconnect", Warning, "002 §5",
        "traffic after DISCONNECT (or KICK, BAN, SERVER_DISCONNECT), beyond 100 ms of datagrams in flight";
    SessionDuplicateDatagram = "session.duplicate-datagram", Warning, "spec-notes B",
        "the same datagram, byte for byte, sent again within 100 ms in the same direction (rtnp's inputs, keep-alives and snapshots without epoch: within 1.6 ms)";
    SessionConversationLimit = "session.conversation-limit", Warning, "SECURITY.md",
        "more conversations than are tracked: later ones share conversation 0 and are not analysed";
    // Entity lifecycles (src/session/entities.rs), per conversation.
    SessionEntityAfterDestroy = "session.entity-after-destroy", Warning, "002 §5.2, 003 ENTITY_DESTROY",
        "a snapshot updates an entity after its ENTITY_DESTROYED, with no spawn between (once per entity and destruction; the detail is the entity id)";
    SessionEntitySpawnedTwice = "session.entity-spawned-twice", Warning, "002 §5.2, 003 ENTITY_SPAWN",
        "ENTITY_SPAWN for an entity id that is alive (spawned and not destroyed since); ids are unique (the detail is the entity id)";
    SessionEntityUnknown = "session.entity-unknown", Warning, "002 §5.2, 003 ENTITY_SPAWN",
        "a snapshot updates an entity the client was never given: no ENTITY_SPAWN and no full state named it (judged once the conversation had a spawn or a full state; once per entity; the detail is the entity id)";
    SessionEntityGhost = "session.entity-ghost", Warning, "spec-notes B, 004 §3.2",
        "the client still holds an entity, never destroyed, that a full state (a complete SERVER_SNAPSHOT_CHUNK set, an rtnp snapshot) leaves out: it draws what the server no longer has (at the full state's last datagram; once per entity; the detail is the entity id)";
    SessionClientsDisagree = "session.clients-disagree", Warning, "002 §6, 004 §3.2 (server authority)",
        "two clients of one server hold the same entity at the same server tick with other values (beyond their layouts' quantisation, when they differ): the first tick and field of each pair of clients, at the frame of the second client's value; judged by `world` (which shows both values) and `check`, not by the reports that read a capture once for speed";
    SessionEntityNeverDestroyed = "session.entity-never-destroyed", Info, "002 §5.2, 003 ENTITY_DESTROY, 004 §8.4",
        "entities spawned or updated and never destroyed by the end of the capture (one finding per conversation, at the first such entity, with the count)";
    SessionEntityLimit = "session.entity-limit", Warning, "SECURITY.md",
        "more entities alive or recently destroyed than are tracked: further ones get no lifecycle findings and no per-entity figures";
    // Budgets from the configuration file's [budgets] table, judged by `check` per conversation.
    BudgetSnapshotKbps = "budget.snapshot-kbps", Error, "rtype-inspect.toml [budgets]",
        "snapshot bandwidth to one client (UDP payload) over some 1 s window is above snapshot_kbps_per_client";
    BudgetDatagramBytes = "budget.datagram-bytes", Error, "rtype-inspect.toml [budgets]",
        "a datagram's UDP payload is larger than datagram_bytes_max";
    BudgetEntityUpdateRate = "budget.entity-update-rate", Error, "rtype-inspect.toml [budgets]",
        "an entity alive for at least 1 s was updated less often than entity_updates_per_s_min";
    BudgetSnapshotHz = "budget.snapshot-hz", Error, "rtype-inspect.toml [budgets]",
        "fewer snapshot ticks than snapshot_hz_min arrived in some 1 s window of the conversation's snapshot stream";
    BudgetRttP95 = "budget.rtt-p95", Error, "rtype-inspect.toml [budgets]",
        "the conversation's 95th-percentile round-trip time is above rtt_p95_ms_max";
    BudgetLossPercent = "budget.loss-percent", Error, "rtype-inspect.toml [budgets]",
        "the estimated loss of client messages or snapshot ticks is above loss_percent_max";
    BudgetSnapshotGap = "budget.snapshot-gap", Error, "rtype-inspect.toml [budgets]",
        "the conversation's longest gap between two snapshot ticks is above snapshot_gap_ms_max";
}
}

impl Rule {
    pub fn info(self) -> &'static RuleInfo {
        let i = self.index();
        CATALOG.get(i).unwrap_or_else(|| {
            let extra = &DESCRIBED
                .get()
                .expect("a described rule was registered")
                .infos;
            &extra[i - CATALOG.len()]
        })
    }
    pub fn id(self) -> &'static str {
        self.info().id
    }
    pub fn severity(self) -> Severity {
        self.info().severity
    }
    /// The rule's number: its place in [`Rule::all`], for tables indexed by rule.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
    /// The rule numbered `i` (see [`Rule::index`]).
    pub fn from_index(i: usize) -> Rule {
        Rule(i as u16)
    }
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::all().iter().copied().find(|r| r.id() == id)
    }

    /// The catalog's rule with this ID, at compile time: the bundled dialects' tables
    /// (build.rs) name their rules by ID, and an ID the catalog lacks fails the build.
    pub const fn by_id(id: &str) -> Rule {
        let mut i = 0;
        while i < CATALOG.len() {
            if super::schema::same(CATALOG[i].id.as_bytes(), id.as_bytes()) {
                return Rule(i as u16);
            }
            i += 1;
        }
        panic!("a bundled dialect names a rule the catalog lacks")
    }

    /// The catalog's rules, then the described dialects'.
    pub fn all() -> &'static [Rule] {
        DESCRIBED.get().map_or(Rule::ALL, |d| &d.all)
    }

    /// Registers the rules of the described dialects (once, before any capture is read; a
    /// second call is refused) and returns the first one's number.
    pub fn register(infos: Vec<RuleInfo>) -> Result<Rule, String> {
        let first = CATALOG.len();
        let total = first + infos.len();
        if total > usize::from(u16::MAX) {
            return Err(format!("more than {} rules", u16::MAX));
        }
        let all = (0..total).map(|i| Rule(i as u16)).collect();
        DESCRIBED
            .set(Described { infos, all })
            .map_err(|_| "the described dialects' rules are registered once".to_string())?;
        Ok(Rule(first as u16))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_table_aligned() {
        for (i, rule) in Rule::ALL.iter().enumerate() {
            assert_eq!(rule.index(), i);
            assert_eq!(Rule::from_id(rule.id()), Some(*rule));
        }
        let mut ids: Vec<_> = CATALOG.iter().map(|r| r.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), CATALOG.len());
    }
}
