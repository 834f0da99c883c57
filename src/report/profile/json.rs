//! The profile as one JSON document (`"schema": "profile/1"`; docs/schemas/profile.schema.json,
//! generated from [`Profile`]): what the text is rendered from, what `diff` compares and
//! `check`'s budgets judge, and the HTML report's data.
//!
//! The document is written through a [`Json`] value, whose sorted maps give every object's keys
//! in alphabetical order (the order they always had); the types keep the schema's order.

use std::cmp::Reverse;

use serde_json::Value as Json;

use super::account::{
    Account, FieldKey, MessageRow, KIND, MAX_FIELD_ROWS, MAX_MESSAGE_ROWS, MAX_SEEN, MAX_TIMELINES,
    MAX_TIMELINE_SAMPLES, MAX_TYPE_ROWS, MTU, OTHER_TYPE, SAFE_PAYLOAD, UNKNOWN_TYPE,
};
use super::document::*;
use super::series::{Counts, Series, MAX_BUCKETS};
use super::timelines::Timelines;
use super::window::Extreme;
use super::{Profiler, MAX_DETAILED, MAX_PROFILED};
use crate::datagram::Dialect;
use crate::pipeline::RunEnd;
use crate::proto::{Direction, Rule};
use crate::report::time::rfc3339;
use crate::report::Tool;
use crate::session::analysis::{Durations, Sequence, Session};
use crate::session::entities::{Entity, Lives, State, MAX_ENTITIES, RATE_EDGES, SHARE_EDGES};
use crate::session::Conversation;

/// Entity records listed per conversation (ordered by id); the counts cover them all.
pub const MAX_LISTED: usize = 256;
/// Log buckets per power of two in the distributions' histograms, as bits.
const HISTOGRAM_BITS: u32 = 2;

/// What the accounts need from the run to be written out.
struct Context<'a> {
    profiler: &'a Profiler,
    end: &'a RunEnd<'a>,
    start: i64,
}

/// The profile document of a finished run, as JSON.
pub fn document(p: &Profiler, end: &RunEnd<'_>) -> Json {
    serde_json::to_value(profile(p, end)).unwrap_or_default()
}

fn profile<'a>(p: &'a Profiler, end: &'a RunEnd<'a>) -> Profile<'a> {
    let start = p.grid.start().or(end.first_ts).unwrap_or(0);
    let cx = Context {
        profiler: p,
        end,
        start,
    };
    let duration = match (end.first_ts, end.last_ts) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
        _ => 0.0,
    };
    let conversations = p
        .conversations
        .iter()
        .enumerate()
        .filter_map(|(i, a)| Some((i as u32 + 1, a.as_deref()?)))
        .map(|(id, a)| {
            let c = end.conversations.get(id);
            let session = end.analysis.session(id);
            ConversationFigures {
                id,
                dialect: session
                    .map(|s| s.dialect.name())
                    .or(a.messages.first().map(|m| m.dialect.name())),
                client: c.map(|c| c.client.to_string()),
                server: c.map(|c| c.server.to_string()),
                layout: c
                    .filter(|c| c.dialect == Dialect::Rtype)
                    .map(|c| end.layout(c)),
                figures: figures(&cx, a, Some(id)),
            }
        })
        .collect();
    let others = (p.others.first.is_some()).then(|| figures(&cx, &p.others, None));
    let findings = Rule::all()
        .iter()
        .filter(|r| p.total.findings[r.index()] > 0)
        .map(|r| RuleFindings {
            id: r.id(),
            severity: r.severity(),
            count: p.total.findings[r.index()],
        })
        .collect();
    Profile {
        schema: SCHEMA,
        tool: Tool::THIS,
        file: &p.file,
        snapshot_profile: end.profile,
        capture: CaptureFacts {
            first_time: end.first_ts.map(rfc3339),
            duration_s: duration,
            frames: end.read.frames,
            datagrams: end.counts.datagrams,
            other_udp: end.counts.other_udp,
            truncated: end.read.truncated.is_some(),
        },
        series: Grid {
            start_time: p.grid.start().map(rfc3339),
            interval_ms: p.grid.interval_nanos as f64 / 1e6,
            requested_interval_ms: p.grid.requested_nanos as f64 / 1e6,
            buckets: p.grid.buckets(),
        },
        limits: Limits {
            conversations_profiled: MAX_PROFILED,
            conversations_detailed: MAX_DETAILED,
            conversations_over: end.conversations.all().len().saturating_sub(MAX_PROFILED),
            message_rows: MAX_MESSAGE_ROWS,
            entity_type_rows: MAX_TYPE_ROWS,
            field_rows: MAX_FIELD_ROWS,
            entity_ids_counted: MAX_SEEN,
            buckets: MAX_BUCKETS,
            entity_records: MAX_ENTITIES,
            entity_records_full: end.analysis.entities().overflow.is_some(),
            entities_listed: MAX_LISTED,
            timelines: MAX_TIMELINES,
            timeline_samples: MAX_TIMELINE_SAMPLES,
        },
        total: figures(&cx, &p.total, None),
        conversations,
        others,
        findings,
    }
}

/// Kilobits per second of `bytes` over `seconds` (`None` over no time).
fn kbps(bytes: u64, seconds: f64) -> Option<f64> {
    (seconds > 0.0).then(|| bytes as f64 * 8.0 / 1000.0 / seconds)
}

fn ratio(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| part / whole)
}

/// A peak window: its kbit/s and the frames it spans.
fn peak(e: &Extreme) -> Peak {
    Peak {
        kbps: e.amount as f64 * 8.0 / 1000.0,
        bytes: e.amount,
        first_frame: e.first_frame,
        last_frame: e.last_frame,
    }
}

/// A distribution, its values divided by `unit` (1000 for microseconds as milliseconds).
fn distribution(d: &Durations, unit: f64) -> Distribution {
    let v = |x: Option<u32>| x.map(|x| f64::from(x) / unit);
    let buckets = d
        .histogram(HISTOGRAM_BITS)
        .into_iter()
        .map(|(from, to, count)| DistributionBucket {
            from: f64::from(from) / unit,
            to: f64::from(to) / unit,
            count,
        })
        .collect();
    Distribution {
        count: d.count(),
        min: v(d.min()),
        p50: v(d.quantile(0.5)),
        p95: v(d.quantile(0.95)),
        p99: v(d.quantile(0.99)),
        max: v(d.max()),
        mean: (d.count() > 0).then(|| d.sum() as f64 / d.count() as f64 / unit),
        buckets,
    }
}

fn sequence(s: &[&Sequence]) -> SequenceLoss {
    let (received, lost) = s
        .iter()
        .fold((0, 0), |(r, l), s| (r + s.received, l + s.lost));
    let expected = received + lost;
    SequenceLoss {
        received,
        lost,
        percent: if expected > 0 {
            lost as f64 * 100.0 / expected as f64
        } else {
            0.0
        },
    }
}

/// The conversations an account covers: one, or every analysed one (for the capture's and the
/// others' accounts; the others' share the capture's loss and entity figures).
fn sessions<'a>(cx: &'a Context<'a>, id: Option<u32>) -> Vec<&'a Session> {
    match id {
        Some(id) => cx.end.analysis.session(id).into_iter().collect(),
        None => cx.end.analysis.sessions().collect(),
    }
}

fn figures<'a>(cx: &Context<'a>, a: &'a Account, id: Option<u32>) -> Figures<'a> {
    let seconds = a.seconds();
    let since = |ts: i64| ts.saturating_sub(cx.start) as f64 / 1e9;
    let total_udp: u64 = a.directions.iter().map(|d| d.udp_bytes).sum();
    let total_datagrams: u64 = a.directions.iter().map(|d| d.datagrams).sum();
    let directions = [
        Some(Direction::ClientToServer),
        Some(Direction::ServerToClient),
        None,
    ]
    .iter()
    .zip(&a.directions)
    .filter(|(dir, d)| dir.is_some() || d.datagrams > 0)
    .map(|(dir, d)| DirectionFigures {
        direction: direction_name(*dir),
        datagrams: d.datagrams,
        udp_bytes: d.udp_bytes,
        wire_bytes: d.wire_bytes,
        kbps: kbps(d.udp_bytes, seconds),
        peak: peak(&d.window.peak),
    })
    .collect();
    let mut rows: Vec<&MessageRow> = a.messages.iter().collect();
    rows.sort_by(|x, y| y.udp_bytes.cmp(&x.udp_bytes).then(x.name.cmp(&y.name)));
    let messages = rows
        .iter()
        .map(|m| {
            let c = &m.compression;
            MessageFigures {
                dialect: m.dialect.name(),
                direction: direction_name(m.direction),
                code: m.code,
                name: &m.name,
                datagrams: m.datagrams,
                datagram_share: ratio(m.datagrams as f64, total_datagrams as f64),
                udp_bytes: m.udp_bytes,
                wire_bytes: m.wire_bytes,
                share: ratio(m.udp_bytes as f64, total_udp as f64),
                mean_bytes: ratio(m.udp_bytes as f64, m.datagrams as f64),
                p50_bytes: m.sizes.quantile(0.5),
                p95_bytes: m.sizes.quantile(0.95),
                max_bytes: m.sizes.max(),
                kbps: kbps(m.udp_bytes, seconds),
                peak: peak(&m.window.peak),
                payload_bytes: m.payload_bytes,
                wire_payload_bytes: m.wire_payload_bytes,
                compression_ratio: ratio(m.payload_bytes as f64, m.wire_payload_bytes as f64),
                compressed: (c.datagrams > 0).then(|| Compressed {
                    datagrams: c.datagrams,
                    wire_payload_bytes: c.wire_bytes,
                    payload_bytes: c.decompressed_bytes,
                    ratio: c.ratio(),
                }),
            }
        })
        .collect();
    let sessions = sessions(cx, id);
    let loss_window = (a.loss_window.peak.amount > 0).then(|| {
        let p = a.loss_window.peak;
        LossPeak {
            lost: p.amount,
            first_frame: p.first_frame,
            last_frame: p.last_frame,
        }
    });
    let client: Vec<&Sequence> = sessions.iter().map(|s| &s.client_sequence).collect();
    let ticks: Vec<&Sequence> = sessions.iter().map(|s| &s.snapshot_ticks).collect();
    let c = &a.chunking;
    let findings = Rule::all()
        .iter()
        .filter(|r| a.findings[r.index()] > 0)
        .map(|r| (r.id(), a.findings[r.index()]))
        .collect();
    Figures {
        first_s: a.first.map(|m| since(m.ts_nanos)),
        duration_s: seconds,
        datagrams: total_datagrams,
        udp_bytes: total_udp,
        wire_bytes: a.directions.iter().map(|d| d.wire_bytes).sum::<u64>(),
        directions,
        messages,
        snapshots: snapshots(cx, a, id),
        entities: entities(cx, id),
        timelines: a.timelines.as_ref().map(|t| timelines(cx, t, id)),
        distributions: Distributions {
            snapshot_bytes: distribution(&a.snapshots.sizes, 1.0),
            snapshot_gap_ms: distribution(&a.gaps, 1000.0),
            rtt_ms: distribution(&a.rtt, 1000.0),
        },
        rtt_max_frame: (a.rtt.count() > 0).then_some(a.rtt_max_frame),
        snapshot_gap_max_frame: (a.gaps.count() > 0).then_some(a.gap_max_frame),
        loss: Loss {
            client: sequence(&client),
            snapshots: sequence(&ticks),
            peak: loss_window,
        },
        duplicates: a.duplicates,
        chunking: Chunking {
            datagrams: c.datagrams,
            udp_bytes: c.udp_bytes,
            largest: c.largest,
            mean_bytes: ratio(c.udp_bytes as f64, c.datagrams as f64),
            sets: c.sets,
            sets_per_s: ratio(c.sets as f64, seconds),
            chunks_per_set: ratio(c.chunks_in_sets as f64, c.sets as f64),
            most_chunks: c.most_chunks,
        },
        datagram_sizes: DatagramSizes {
            largest: a.largest.map(|(bytes, frame)| Largest { bytes, frame }),
            mtu: MTU,
            mtu_headroom: (a.largest_wire > 0).then(|| MTU as i64 - a.largest_wire as i64),
            over_safe: a.over_safe,
            safe_bytes: SAFE_PAYLOAD,
            over_mtu: a.over_mtu,
        },
        series: a.series.as_ref().map(|s| series(cx, a, s)),
        findings,
    }
}

/// The name of an entity type code: the LevelInit sprite of a type id where the conversation
/// (or, for the capture, any conversation) announced one, else the id; a component kind's name.
fn type_name(cx: &Context<'_>, code: u32, id: Option<u32>) -> (String, Option<u32>) {
    match code {
        UNKNOWN_TYPE => ("(unknown type)".into(), None),
        OTHER_TYPE => ("(other)".into(), None),
        c if c >= KIND => (
            cx.profiler
                .kinds
                .get((c - KIND) as usize)
                .map_or("(other)".into(), |k| (*k).to_owned()),
            None,
        ),
        type_id => {
            let sprite = |c: &Conversation| c.archetypes.sprite(type_id.into()).map(str::to_owned);
            let sprite = match id {
                Some(id) => cx.end.conversations.get(id).and_then(sprite),
                None => cx.end.conversations.all().iter().find_map(sprite),
            };
            (
                sprite
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| format!("type {type_id}")),
                Some(type_id),
            )
        }
    }
}

fn snapshots(cx: &Context<'_>, a: &Account, id: Option<u32>) -> SnapshotFigures {
    let n = &a.snapshots;
    let seconds = a.seconds();
    let payload = n.payload_bytes as f64;
    let wire = n.wire_payload_bytes as f64;
    let mut types: Vec<EntityType> = n
        .types
        .iter()
        .map(|t| {
            let (name, type_id) = type_name(cx, t.code, id);
            // Two types may share a sprite: the label tells them apart.
            let label = match type_id {
                Some(n) if name != format!("type {n}") => format!("{name} ({n})"),
                _ => name.clone(),
            };
            EntityType {
                name,
                type_id,
                label,
                entities: t.entities,
                updates: t.updates,
                updates_per_s: ratio(t.updates as f64, seconds),
                bytes: t.bytes,
                bytes_per_s: ratio(t.bytes as f64, seconds),
                share: ratio(t.bytes as f64, payload),
                wire_bytes: t.wire_bytes,
            }
        })
        .collect();
    types.sort_by_key(|t| Reverse(t.bytes));
    // rt's snapshots are of components, not of entity types.
    let components = !n.types.is_empty() && n.types.iter().all(|t| t.code >= KIND);
    let grouped_by = if components {
        GroupedBy::Component
    } else {
        GroupedBy::EntityType
    };
    let p = cx.profiler;
    let row = |field: String,
               kind: FieldKind,
               bit: Option<usize>,
               present: Option<u64>,
               bytes: u64,
               wire_bytes: f64| FieldBytes {
        field,
        kind,
        bit,
        present,
        bytes,
        share: ratio(bytes as f64, payload),
        wire_bytes,
        wire_share: ratio(wire_bytes, wire),
    };
    let mut fields: Vec<FieldBytes> = n
        .fields
        .iter()
        .map(|f| {
            let (name, bit) = match f.key {
                FieldKey::Bit(bit) => {
                    let field = p.reading.profile.field(usize::from(bit));
                    let name = field.map_or("?", |f| f.name).to_owned();
                    (name, Some(usize::from(bit)))
                }
                FieldKey::Slot(slot) => {
                    let field = p.costs.field(slot);
                    let name = match p.slot_kinds.get(usize::from(slot)) {
                        Some(k) if *k >= KIND && *k != OTHER_TYPE => {
                            format!("{}.{}", type_name(cx, *k, id).0, field.name)
                        }
                        _ => field.name.to_owned(),
                    };
                    (name, p.costs.slot_bit(slot).map(usize::from))
                }
                FieldKey::Json(i) => (p.keys[usize::from(i)].clone(), None),
                FieldKey::Other => ("(other)".to_owned(), None),
            };
            row(
                name,
                FieldKind::Field,
                bit,
                Some(f.present),
                f.bytes,
                f.wire_bytes,
            )
        })
        .collect();
    for (name, kind, bytes, wire_bytes) in [
        ("(message header)", FieldKind::Header, n.head, n.head_wire),
        (
            "(entity framing)",
            FieldKind::Framing,
            n.framing,
            n.framing_wire,
        ),
        (
            "(undecoded)",
            FieldKind::Undecoded,
            n.undecoded,
            n.undecoded_wire,
        ),
    ] {
        fields.push(row(name.into(), kind, None, None, bytes, wire_bytes));
    }
    fields.sort_by_key(|f| Reverse(f.bytes));
    let gaps = &a.gaps;
    let quietest = n.ticks_window.quietest().map(|q| QuietestSecond {
        ticks: q.amount,
        before_frame: q.first_frame,
        after_frame: q.last_frame,
    });
    SnapshotFigures {
        datagrams: n.datagrams,
        ticks: n.ticks,
        hz: (gaps.sum() > 0).then(|| gaps.count() as f64 * 1e6 / gaps.sum() as f64),
        udp_bytes: n.udp_bytes,
        payload_bytes: n.payload_bytes,
        wire_payload_bytes: n.wire_payload_bytes,
        compression_ratio: ratio(payload, wire),
        kbps: kbps(n.udp_bytes, seconds),
        peak: peak(&n.bytes_window.peak),
        quietest_second: quietest,
        grouped_by,
        entity_types: types,
        entity_ids_complete: !n.seen_full,
        fields,
    }
}

/// Lives counted between `edges`, rising (from 0 up) or falling (from the first edge down).
fn lives_buckets(edges: &[f64], counts: &[u64], rising: bool) -> Vec<LivesBucket> {
    counts
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let (from, to) = if rising {
                (
                    i.checked_sub(1).map(|j| edges[j]).unwrap_or(0.0),
                    edges.get(i).copied(),
                )
            } else {
                (edges[i], i.checked_sub(1).map(|j| edges[j]))
            };
            LivesBucket {
                from,
                to,
                entities: *n,
            }
        })
        .collect()
}

fn record(cx: &Context<'_>, e: &Entity) -> EntityRecord {
    let since = |ts: i64| ts.saturating_sub(cx.start) as f64 / 1e9;
    EntityRecord {
        id: e.id,
        type_id: e.type_id,
        state: match e.state {
            State::Spawned => EntityState::Spawned,
            State::Seen => EntityState::Seen,
            State::Destroyed => EntityState::Destroyed,
        },
        spawn_frame: e.spawned.map(|a| a.frame),
        destroy_frame: e.destroyed.map(|a| a.frame),
        first_s: e.first.map(|a| since(a.ts_nanos)),
        last_s: e.last.map(|a| since(a.ts_nanos)),
        updates: e.updates,
        updates_per_s: e.rate_hz(),
        tick_share: e.tick_share(),
        longest_gap_ms: (e.updates > 1).then(|| e.longest_gap.nanos as f64 / 1e6),
        after_destroy: e.after_destroy,
    }
}

fn entities(cx: &Context<'_>, id: Option<u32>) -> EntityFigures {
    let all = cx.end.analysis.entities();
    let (lives, records): (Lives, Vec<Entity>) = match id {
        Some(id) => (all.lives(id), all.records(id)),
        None => {
            let mut lives = Lives::default();
            for s in cx.end.analysis.sessions() {
                lives.merge(&all.lives(s.id));
            }
            (lives, Vec::new())
        }
    };
    EntityFigures {
        lives: lives.count,
        updates: lives.updates,
        rate_histogram: lives_buckets(&RATE_EDGES, &lives.rates, true),
        tick_share_histogram: lives_buckets(&SHARE_EDGES, &lives.tick_shares, false),
        longest_gap: lives.longest_gap.map(|(entity, g)| LongestGap {
            entity,
            ms: g.nanos as f64 / 1e6,
            from_frame: g.from,
            to_frame: g.to,
        }),
        slowest: lives
            .slowest
            .map(|(entity, updates_per_s, first, last)| Slowest {
                entity,
                updates_per_s,
                first_frame: first.frame,
                last_frame: last.frame,
            }),
        records: records.len(),
        listed: records
            .iter()
            .take(MAX_LISTED)
            .map(|e| record(cx, e))
            .collect(),
    }
}

fn timelines(cx: &Context<'_>, t: &Timelines, id: Option<u32>) -> Vec<Timeline> {
    let since = |ts: i64| ts.saturating_sub(cx.start) as f64 / 1e9;
    let finite = |v: f32| v.is_finite().then_some(f64::from(v));
    t.list
        .iter()
        .map(|l| Timeline {
            id: l.id,
            type_name: type_name(cx, l.type_code, id).0,
            sampled_updates: l.updates,
            stride: l.stride,
            spawns_s: l.spawns.iter().map(|t| since(*t)).collect(),
            destroys_s: l.destroys.iter().map(|t| since(*t)).collect(),
            samples: (l.samples.iter())
                .map(|(ts, x, y)| (since(*ts), finite(*x), finite(*y)))
                .collect(),
        })
        .collect()
}

/// A series padded to the grid's length.
fn values(c: &Counts, len: usize) -> Vec<u64> {
    let mut v = c.0.clone();
    v.resize(len.max(v.len()), 0);
    v
}

fn series<'a>(cx: &Context<'_>, a: &'a Account, s: &Series) -> BucketSeries<'a> {
    let len = cx.profiler.grid.buckets();
    let mean = |sum: &Counts, count: &Counts| -> Vec<Option<f64>> {
        values(count, len)
            .iter()
            .zip(values(sum, len))
            .map(|(n, total)| (*n > 0).then(|| total as f64 / *n as f64 / 1000.0))
            .collect()
    };
    let bytes = a
        .messages
        .iter()
        .filter_map(|m| {
            Some(MessageSeries {
                direction: direction_name(m.direction),
                name: &m.name,
                values: values(m.series.as_ref()?, len),
            })
        })
        .collect();
    BucketSeries {
        datagrams: DatagramSeries {
            client_to_server: values(&s.datagrams[0], len),
            server_to_client: values(&s.datagrams[1], len),
        },
        bytes,
        snapshots: values(&s.snapshots, len),
        snapshot_gap_ms_mean: mean(&s.gap_micros, &s.gaps),
        snapshot_gap_ms_max: values(&s.gap_max_micros, len)
            .iter()
            .zip(values(&s.gaps, len))
            .map(|(max, n)| (n > 0).then(|| *max as f64 / 1000.0))
            .collect(),
        rtt_samples: values(&s.rtt_samples, len),
        rtt_ms_mean: mean(&s.rtt_micros, &s.rtt_samples),
        losses: values(&s.losses, len),
        duplicates: values(&s.duplicates, len),
        findings: values(&s.findings, len),
    }
}
