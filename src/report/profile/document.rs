//! The profile document's types (`"schema": "profile/1"`; docs/schemas/profile.schema.json is
//! generated from [`Profile`]), which [`super::json`] fills from the accounts.

use std::collections::BTreeMap;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::Value as Json;

use crate::datagram::Dialect;
use crate::proto::{Direction, Severity};
use crate::report::{names_schema, Tool};

/// The schema this document follows.
pub const SCHEMA: &str = "profile/1";

/// The document `rtype-inspect profile FILE --format json` writes: where the bytes go, per
/// conversation and for the whole capture. Byte counts are UDP payload unless named `wire_*`
/// (with IP and UDP headers); snapshot field bytes are of the decompressed payload, `wire_bytes`
/// their proportional share of the bytes on the wire. `diff` reads it, and `check` judges budgets
/// from it.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "rtype-inspect profile", deny_unknown_fields)]
pub struct Profile<'a> {
    #[schemars(extend("const" = SCHEMA))]
    pub(super) schema: &'static str,
    pub(super) tool: Tool,
    /// The capture, as named on the command line.
    pub(super) file: &'a str,
    /// The snapshot field profile every rtype conversation was read with (`document` by
    /// default), or `mixed` when they were read with several (each conversation's `layout` says
    /// which).
    pub(super) snapshot_profile: &'a str,
    pub(super) capture: CaptureFacts,
    pub(super) series: Grid,
    pub(super) limits: Limits,
    /// The whole capture: its conversations' figures together (a peak window is the busiest
    /// conversation's), its series kept as the datagrams came.
    pub(super) total: Figures<'a>,
    pub(super) conversations: Vec<ConversationFigures<'a>>,
    /// Datagrams of conversations past `limits.conversations_profiled` (and of conversation 0,
    /// past the session layer's limit), profiled together; null when there are none.
    pub(super) others: Option<Figures<'a>>,
    pub(super) findings: Vec<RuleFindings>,
}

/// The capture as read.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct CaptureFacts {
    pub(super) first_time: Option<String>,
    pub(super) duration_s: f64,
    pub(super) frames: u64,
    pub(super) datagrams: u64,
    pub(super) other_udp: u64,
    pub(super) truncated: bool,
}

/// The time buckets every `series` array follows: bucket i starts at start_time + i ×
/// interval_ms. The interval doubles (the requested one's multiple) when a capture outlasts
/// `limits.buckets` buckets.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Grid {
    pub(super) start_time: Option<String>,
    pub(super) interval_ms: f64,
    pub(super) requested_interval_ms: f64,
    pub(super) buckets: usize,
}

/// The bounds that keep a profile's memory flat, and whether they were reached.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Limits {
    pub(super) conversations_profiled: usize,
    pub(super) conversations_detailed: usize,
    pub(super) conversations_over: usize,
    pub(super) message_rows: usize,
    pub(super) entity_type_rows: usize,
    pub(super) field_rows: usize,
    pub(super) entity_ids_counted: usize,
    pub(super) buckets: usize,
    pub(super) entity_records: usize,
    pub(super) entity_records_full: bool,
    pub(super) entities_listed: usize,
    pub(super) timelines: usize,
    pub(super) timeline_samples: usize,
}

/// The findings of one rule in the capture.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct RuleFindings {
    #[schemars(regex(pattern = r"^[a-z0-9]+(\.[a-z0-9-]+)+$"))]
    pub(super) id: &'static str,
    #[schemars(schema_with = "crate::report::severity_schema")]
    pub(super) severity: Severity,
    pub(super) count: u64,
}

/// One conversation: who and what it was, and its figures.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct ConversationFigures<'a> {
    #[schemars(range(min = 1))]
    pub(super) id: u32,
    #[schemars(schema_with = "dialect_or_null_schema")]
    pub(super) dialect: Option<&'static str>,
    pub(super) client: Option<String>,
    pub(super) server: Option<String>,
    /// The snapshot profile the conversation's snapshots were read with (rtype conversations
    /// only): `document`, the one named, or the one found to fit them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) layout: Option<&'a str>,
    #[serde(flatten)]
    pub(super) figures: Figures<'a>,
}

/// The figures of an account: a conversation, the capture, or the conversations profiled
/// together.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Figures<'a> {
    pub(super) first_s: Option<f64>,
    pub(super) duration_s: f64,
    pub(super) datagrams: u64,
    pub(super) udp_bytes: u64,
    pub(super) wire_bytes: u64,
    pub(super) directions: Vec<DirectionFigures>,
    pub(super) messages: Vec<MessageFigures<'a>>,
    pub(super) snapshots: SnapshotFigures,
    pub(super) entities: EntityFigures,
    pub(super) timelines: Option<Vec<Timeline>>,
    pub(super) distributions: Distributions,
    /// The pong that closed the longest round trip.
    pub(super) rtt_max_frame: Option<u64>,
    /// The snapshot that ended the longest snapshot gap.
    pub(super) snapshot_gap_max_frame: Option<u64>,
    pub(super) loss: Loss,
    pub(super) duplicates: u64,
    pub(super) chunking: Chunking,
    pub(super) datagram_sizes: DatagramSizes,
    pub(super) series: Option<BucketSeries<'a>>,
    #[schemars(extend("propertyNames" = {"pattern": r"^[a-z0-9]+(\.[a-z0-9-]+)+$"}))]
    pub(super) findings: BTreeMap<&'static str, u64>,
}

/// One direction's datagrams.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct DirectionFigures {
    #[schemars(schema_with = "direction_schema")]
    pub(super) direction: &'static str,
    pub(super) datagrams: u64,
    pub(super) udp_bytes: u64,
    pub(super) wire_bytes: u64,
    pub(super) kbps: Option<f64>,
    pub(super) peak: Peak,
}

/// The busiest 1 s window (its start at 10 ms steps): its kbit/s and bytes, and the first and
/// last frame in it.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Peak {
    pub(super) kbps: f64,
    pub(super) bytes: u64,
    pub(super) first_frame: u64,
    pub(super) last_frame: u64,
}

/// Nearest-rank percentiles (exact up to 64 samples, within 1.6 % after) and log buckets, 4 per
/// power of two: `from` included, `to` not.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Distribution {
    pub(super) count: u64,
    pub(super) min: Option<f64>,
    pub(super) p50: Option<f64>,
    pub(super) p95: Option<f64>,
    pub(super) p99: Option<f64>,
    pub(super) max: Option<f64>,
    pub(super) mean: Option<f64>,
    pub(super) buckets: Vec<DistributionBucket>,
}

/// Samples from `from` (included) to `to` (not).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct DistributionBucket {
    pub(super) from: f64,
    pub(super) to: f64,
    pub(super) count: u64,
}

/// Datagrams of one message type in one direction.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct MessageFigures<'a> {
    #[schemars(schema_with = "dialect_schema")]
    pub(super) dialect: &'static str,
    #[schemars(schema_with = "direction_schema")]
    pub(super) direction: &'static str,
    pub(super) code: Option<u8>,
    /// The message's name; `(other)` for types past `limits.message_rows`.
    pub(super) name: &'a str,
    pub(super) datagrams: u64,
    pub(super) datagram_share: Option<f64>,
    pub(super) udp_bytes: u64,
    pub(super) wire_bytes: u64,
    /// Of the account's UDP payload bytes.
    pub(super) share: Option<f64>,
    pub(super) mean_bytes: Option<f64>,
    pub(super) p50_bytes: Option<u32>,
    pub(super) p95_bytes: Option<u32>,
    pub(super) max_bytes: Option<u32>,
    pub(super) kbps: Option<f64>,
    pub(super) peak: Peak,
    /// The message payloads, decompressed.
    pub(super) payload_bytes: u64,
    pub(super) wire_payload_bytes: u64,
    /// payload_bytes / wire_payload_bytes over every datagram of the type.
    pub(super) compression_ratio: Option<f64>,
    /// The compressed datagrams alone (rtype LZ4); null when none was.
    pub(super) compressed: Option<Compressed>,
}

/// The compressed datagrams of a message type.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Compressed {
    pub(super) datagrams: u64,
    pub(super) wire_payload_bytes: u64,
    pub(super) payload_bytes: u64,
    pub(super) ratio: Option<f64>,
}

/// Snapshot datagrams (rtype SNAPSHOT and SNAPSHOT_CHUNK, rt component snapshots, rtnp
/// snapshot). `fields` add up to `payload_bytes` exactly: the message header before the entity
/// list, each entity's framing (id, update mask), each field, and what the walk could not read.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct SnapshotFigures {
    pub(super) datagrams: u64,
    /// New snapshot ticks, as `stats` counts them.
    pub(super) ticks: u64,
    pub(super) hz: Option<f64>,
    pub(super) udp_bytes: u64,
    pub(super) payload_bytes: u64,
    pub(super) wire_payload_bytes: u64,
    pub(super) compression_ratio: Option<f64>,
    pub(super) kbps: Option<f64>,
    pub(super) peak: Peak,
    /// The 1 s window of the snapshot stream with the fewest ticks (between its first and last
    /// snapshot), and the frames around it; null for a stream shorter than 1 s and for the
    /// capture's account.
    pub(super) quietest_second: Option<QuietestSecond>,
    /// What `entity_types` rows are: entity types (rtype, rtnp), or components (rt's snapshots
    /// are of one component each).
    pub(super) grouped_by: GroupedBy,
    pub(super) entity_types: Vec<EntityType>,
    pub(super) entity_ids_complete: bool,
    pub(super) fields: Vec<FieldBytes>,
}

/// The fewest snapshot ticks in a second.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct QuietestSecond {
    pub(super) ticks: u64,
    pub(super) before_frame: u64,
    pub(super) after_frame: u64,
}

/// What the snapshots' type rows are of.
#[derive(Serialize, JsonSchema)]
pub(super) enum GroupedBy {
    #[serde(rename = "entity type")]
    EntityType,
    #[serde(rename = "component")]
    Component,
}

/// The snapshot bytes of one entity type (or component).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct EntityType {
    /// rtype: the LevelInit archetype's sprite, else `type N`; rt: the component kind;
    /// `(unknown type)`, `(other)`.
    #[serde(rename = "type")]
    pub(super) name: String,
    pub(super) type_id: Option<u32>,
    /// How the views name the row: the type and its id where two may share a sprite (`bullet
    /// (3)`), else the type.
    pub(super) label: String,
    /// Distinct entity ids.
    pub(super) entities: u64,
    pub(super) updates: u64,
    pub(super) updates_per_s: Option<f64>,
    pub(super) bytes: u64,
    pub(super) bytes_per_s: Option<f64>,
    pub(super) share: Option<f64>,
    pub(super) wire_bytes: f64,
}

/// The snapshot bytes of one field, or of the header, framing or undecoded rest.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct FieldBytes {
    pub(super) field: String,
    pub(super) kind: FieldKind,
    #[schemars(range(max = 15))]
    pub(super) bit: Option<usize>,
    pub(super) present: Option<u64>,
    pub(super) bytes: u64,
    pub(super) share: Option<f64>,
    pub(super) wire_bytes: f64,
    pub(super) wire_share: Option<f64>,
}

/// What a snapshot byte row counts.
#[derive(Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum FieldKind {
    Field,
    Header,
    Framing,
    Undecoded,
}

/// Entity lives (an id from its spawn or first update to its destruction) and how often each
/// was updated.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct EntityFigures {
    pub(super) lives: u64,
    pub(super) updates: u64,
    /// Lives by updates per second (lives of one instant are not in it).
    pub(super) rate_histogram: Vec<LivesBucket>,
    /// Lives by the share of the conversation's snapshot ticks that updated them, from every
    /// tick (1) down.
    pub(super) tick_share_histogram: Vec<LivesBucket>,
    pub(super) longest_gap: Option<LongestGap>,
    /// The least updated life at least 1 s long.
    pub(super) slowest: Option<Slowest>,
    pub(super) records: usize,
    pub(super) listed: Vec<EntityRecord>,
}

/// Lives from `from` to `to` (none: no bound).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct LivesBucket {
    pub(super) from: f64,
    pub(super) to: Option<f64>,
    pub(super) entities: u64,
}

/// The longest time an entity went without an update.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct LongestGap {
    pub(super) entity: u32,
    pub(super) ms: f64,
    pub(super) from_frame: u64,
    pub(super) to_frame: u64,
}

/// The least updated life.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Slowest {
    pub(super) entity: u32,
    pub(super) updates_per_s: f64,
    pub(super) first_frame: u64,
    pub(super) last_frame: u64,
}

/// One entity's record.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct EntityRecord {
    pub(super) id: u32,
    pub(super) type_id: Option<u16>,
    pub(super) state: EntityState,
    pub(super) spawn_frame: Option<u64>,
    pub(super) destroy_frame: Option<u64>,
    pub(super) first_s: Option<f64>,
    pub(super) last_s: Option<f64>,
    pub(super) updates: u64,
    pub(super) updates_per_s: Option<f64>,
    pub(super) tick_share: Option<f64>,
    pub(super) longest_gap_ms: Option<f64>,
    pub(super) after_destroy: u64,
}

/// Where an entity's life stands.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum EntityState {
    Spawned,
    Seen,
    Destroyed,
}

/// One entity's sampled updates: [seconds since the capture's start, x, y] (null where the
/// update carried no position), every `stride`-th sample kept.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Timeline {
    pub(super) id: u32,
    #[serde(rename = "type")]
    pub(super) type_name: String,
    pub(super) sampled_updates: u64,
    #[schemars(range(min = 1))]
    pub(super) stride: u64,
    pub(super) spawns_s: Vec<f64>,
    pub(super) destroys_s: Vec<f64>,
    pub(super) samples: Vec<(f64, Option<f64>, Option<f64>)>,
}

/// An account's distributions.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Distributions {
    pub(super) snapshot_bytes: Distribution,
    pub(super) snapshot_gap_ms: Distribution,
    pub(super) rtt_ms: Distribution,
}

/// Client messages and snapshot ticks lost.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Loss {
    pub(super) client: SequenceLoss,
    pub(super) snapshots: SequenceLoss,
    /// The 1 s window with the most losses seen, and its frames.
    pub(super) peak: Option<LossPeak>,
}

/// One sequence's losses.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct SequenceLoss {
    pub(super) received: u64,
    pub(super) lost: u64,
    pub(super) percent: f64,
}

/// The most losses in a second.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct LossPeak {
    pub(super) lost: u64,
    pub(super) first_frame: u64,
    pub(super) last_frame: u64,
}

/// Snapshot chunks and the sets they were reassembled into.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Chunking {
    pub(super) datagrams: u64,
    pub(super) udp_bytes: u64,
    pub(super) largest: u64,
    pub(super) mean_bytes: Option<f64>,
    pub(super) sets: u64,
    pub(super) sets_per_s: Option<f64>,
    pub(super) chunks_per_set: Option<f64>,
    pub(super) most_chunks: u64,
}

/// The datagrams' sizes against the MTU.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct DatagramSizes {
    pub(super) largest: Option<Largest>,
    pub(super) mtu: u64,
    /// The MTU less the largest datagram with its IP and UDP headers (negative: it was
    /// fragmented).
    pub(super) mtu_headroom: Option<i64>,
    pub(super) over_safe: u64,
    pub(super) safe_bytes: u64,
    pub(super) over_mtu: u64,
}

/// The largest datagram.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct Largest {
    pub(super) bytes: u64,
    pub(super) frame: u64,
}

/// Per time bucket (see the document's `series`); a mean is null where the bucket has no sample.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct BucketSeries<'a> {
    pub(super) datagrams: DatagramSeries,
    pub(super) bytes: Vec<MessageSeries<'a>>,
    pub(super) snapshots: Vec<u64>,
    pub(super) snapshot_gap_ms_mean: Vec<Option<f64>>,
    pub(super) snapshot_gap_ms_max: Vec<Option<f64>>,
    pub(super) rtt_samples: Vec<u64>,
    pub(super) rtt_ms_mean: Vec<Option<f64>>,
    pub(super) losses: Vec<u64>,
    pub(super) duplicates: Vec<u64>,
    pub(super) findings: Vec<u64>,
}

/// Datagrams per bucket, each way.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct DatagramSeries {
    pub(super) client_to_server: Vec<u64>,
    pub(super) server_to_client: Vec<u64>,
}

/// One message type's bytes per bucket.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(super) struct MessageSeries<'a> {
    #[schemars(schema_with = "direction_schema")]
    pub(super) direction: &'static str,
    pub(super) name: &'a str,
    pub(super) values: Vec<u64>,
}

/// A direction's name, `unknown` for none.
pub(super) fn direction_name(direction: Option<Direction>) -> &'static str {
    direction.map_or("unknown", Direction::name)
}

fn direction_schema(_: &mut SchemaGenerator) -> Schema {
    names_schema(&[
        Direction::ClientToServer.name(),
        Direction::ServerToClient.name(),
        direction_name(None),
    ])
}

/// The built-in dialects, the ones the schema lists.
pub(super) const DIALECTS: [Dialect; 3] = [Dialect::Rtype, Dialect::Rt, Dialect::Rtnp];

fn dialect_schema(_: &mut SchemaGenerator) -> Schema {
    names_schema(&DIALECTS.map(Dialect::name))
}

fn dialect_or_null_schema(_: &mut SchemaGenerator) -> Schema {
    let mut names: Vec<Json> = DIALECTS.iter().map(|d| d.name().into()).collect();
    names.push(Json::Null);
    json_schema!({ "enum": names })
}
