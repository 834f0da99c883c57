//! The stats document's types (`"schema": "stats/1"`; docs/schemas/stats.schema.json is
//! generated from [`StatsDocument`]).

use std::cell::RefCell;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

use super::SCHEMA;
use crate::proto::Direction;
use crate::report::{names_schema, Tool};

/// The document `rtype-inspect stats FILE --format json` writes: per conversation, the
/// handshake, traffic, timing, round trips (min, p50, max in ms), sequences and loss, LevelInit,
/// compression and session findings.
// The fields of each struct are in the order serde_json's sorted maps wrote them before.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect stats", deny_unknown_fields)]
pub struct StatsDocument<'a> {
    pub(super) config: StatsConfig,
    pub(super) config_file: Option<&'a str>,
    #[schemars(with = "Vec<ConversationStats>")]
    pub(super) conversations: Streamed<'a>,
    /// The capture, as named on the command line (- for standard input).
    pub(super) file: &'a str,
    /// The snapshot field profile every rtype conversation was read with, or `mixed`.
    pub(super) profile: &'a str,
    #[schemars(extend("const" = SCHEMA))]
    pub(super) schema: &'static str,
    pub(super) tool: Tool,
    /// Datagrams of conversations beyond those the analysis follows.
    pub(super) unanalysed_datagrams: u64,
}

/// What the snapshot rate is judged against.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct StatsConfig {
    pub(super) snapshot_hz: f64,
    /// In percent, as --snapshot-tolerance and the configuration file give it.
    pub(super) snapshot_tolerance: f64,
}

/// The conversations, each built as it is written: memory holds one at a time.
pub(super) struct Streamed<'a>(
    pub(super) RefCell<Option<Box<dyn Iterator<Item = ConversationStats> + 'a>>>,
);

impl<'a> Streamed<'a> {
    /// The conversations, once.
    pub(super) fn take(&self) -> impl Iterator<Item = ConversationStats> + 'a {
        self.0.borrow_mut().take().into_iter().flatten()
    }
}

impl Serialize for Streamed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.take())
    }
}

/// The session analysis of one conversation.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct ConversationStats {
    /// Null when the conversation is not known to the run (a filtered analysis).
    pub(super) client: Option<String>,
    pub(super) compression: CompressionStats,
    /// The dialect's name: rtype, rt, rtnp, or a described dialect's id.
    pub(super) dialect: &'static str,
    pub(super) disconnect: Disconnect,
    pub(super) duration_s: f64,
    /// Session findings by rule ID.
    pub(super) findings: BTreeMap<&'static str, u64>,
    pub(super) first_frame: u64,
    /// RFC 3339, UTC, nanoseconds.
    pub(super) first_time: String,
    pub(super) handshake: Handshake,
    pub(super) id: u32,
    pub(super) last_frame: u64,
    /// RFC 3339, UTC, nanoseconds.
    pub(super) last_time: String,
    pub(super) level_init: LevelInitStats,
    pub(super) player_id: Option<u32>,
    pub(super) player_id_changes: u64,
    pub(super) rtt_ms: RoundTrips,
    /// The client's messages, then the server's snapshots.
    pub(super) sequences: Vec<SequenceStats>,
    pub(super) server: Option<String>,
    pub(super) snapshots: Snapshots,
    /// Each message type sent at a rate, with when it stopped.
    pub(super) streams: Vec<StreamStats>,
    pub(super) traffic: TrafficStats,
}

/// How the handshake went, step by step.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Handshake {
    /// The capture holds the HELLO: the order of the steps is judged.
    pub(super) order_judged: bool,
    pub(super) outcome: &'static str,
    pub(super) steps: Vec<HandshakeStep>,
}

/// One step of the handshake, at its first frame.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct HandshakeStep {
    pub(super) count: u64,
    pub(super) frame: u64,
    pub(super) role: &'static str,
    pub(super) step: &'static str,
    /// Seconds since the conversation's first datagram.
    pub(super) time_s: f64,
}

/// Datagrams per direction.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct TrafficStats {
    pub(super) client_to_server: DirectionTraffic,
    pub(super) server_to_client: DirectionTraffic,
    pub(super) unknown: DirectionTraffic,
}

/// Datagrams of one direction.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct DirectionTraffic {
    pub(super) bytes: u64,
    pub(super) datagrams: u64,
    /// Byte-identical duplicates.
    pub(super) duplicates: u64,
}

/// The server's snapshots: their rate and the gaps between them.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Snapshots {
    pub(super) gap_ms: DurationStats,
    pub(super) rate_hz: Option<f64>,
    /// Enough ticks to judge the rate.
    pub(super) rate_judged: bool,
    /// Within the tolerance of the configured rate (null when not judged).
    pub(super) rate_ok: Option<bool>,
    pub(super) tick_rate_hz: Option<f64>,
    pub(super) ticks: u64,
}

/// A distribution of durations, in milliseconds (null when empty).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct DurationStats {
    pub(super) count: u64,
    pub(super) max: Option<f64>,
    pub(super) mean: Option<f64>,
    pub(super) min: Option<f64>,
    pub(super) p50: Option<f64>,
    pub(super) p99: Option<f64>,
}

/// One message type sent at a rate.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct StreamStats {
    pub(super) datagrams: u64,
    pub(super) first_frame: u64,
    pub(super) first_s: f64,
    pub(super) last_frame: u64,
    pub(super) last_s: f64,
    pub(super) max_gap_ms: f64,
    pub(super) message: &'static str,
    pub(super) rate_hz: Option<f64>,
    pub(super) rate_ok: Option<bool>,
    /// Seconds before the conversation's play ended (null when it did not stop).
    pub(super) stopped_before_end_s: Option<f64>,
}

/// Pings and pongs, and the round trips of those paired, in milliseconds.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct RoundTrips {
    pub(super) max: Option<f64>,
    pub(super) min: Option<f64>,
    pub(super) p50: Option<f64>,
    pub(super) p99: Option<f64>,
    pub(super) pairs: u64,
    pub(super) pings: u64,
    pub(super) pongs: u64,
    pub(super) unanswered_pings: u64,
    pub(super) unmatched_pongs: u64,
}

/// The sequence analysis of one direction.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct SequenceStats {
    /// The sequence started: the counts below are known.
    pub(super) analysed: bool,
    #[schemars(schema_with = "direction_schema")]
    pub(super) direction: &'static str,
    pub(super) duplicates: u64,
    /// Which messages the sequence follows, and why those.
    pub(super) family: &'static str,
    pub(super) loss_ratio: f64,
    /// Estimated.
    pub(super) lost: u64,
    pub(super) received: u64,
    pub(super) reordered: u64,
    pub(super) resets: u64,
}

/// The schema of a sequence's direction: its names.
pub(super) fn direction_schema(_: &mut SchemaGenerator) -> Schema {
    names_schema(&[Direction::ClientToServer, Direction::ServerToClient].map(Direction::name))
}

/// The LevelInit's delivery.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct LevelInitStats {
    pub(super) ack_delay_ms: Option<f64>,
    pub(super) ack_frame: Option<u64>,
    pub(super) acknowledged: bool,
    pub(super) first_frame: Option<u64>,
    pub(super) retried: bool,
    pub(super) sent: u64,
}

/// The compressed payloads.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct CompressionStats {
    pub(super) datagrams: u64,
    pub(super) decompressed_bytes: u64,
    pub(super) ratio: Option<f64>,
    pub(super) wire_bytes: u64,
}

/// Datagrams after the client's disconnect.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Disconnect {
    pub(super) after: u64,
    /// Flagged: the rest came within 100 ms, in flight.
    pub(super) flagged: u64,
    pub(super) reconnects: u64,
}
