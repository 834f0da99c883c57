//! The world view as a static file: a conversation's entities at four of the page's keyframes.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::*;

/// Keyframes a conversation's world view file shows, side by side: a quarter, half and three
/// quarters of the way through the keyframes the page keeps, and the last (the world at the
/// capture's end, or where the page's bound cut the keyframes). A static file cannot play the
/// page's slider; these four show how the level filled and emptied, each as `world --at` gives
/// it at that time. At most [`super::world::ENTITIES_PER_KEYFRAME`] entities a panel.
pub(super) const WORLD_PANELS: usize = 4;
const PANEL_WIDTH: f64 = 440.0;
const PANEL_HEIGHT: f64 = 260.0;
/// Room above a panel for its time and count.
const PANEL_TITLE: f64 = 22.0;

/// An entity at a keyframe, as the page's keyframes hold it: id, type index, x, y.
type Placed = (u64, usize, Option<f64>, Option<f64>);

/// A conversation's world view (`wc`, a conversation of the page's `world` member): the
/// entities held at [`WORLD_PANELS`] keyframes, each a `<g class="world-panel" data-t=T
/// data-entities=N>` of one `<circle class="entity" data-id data-x data-y data-type>` per
/// entity with a position, drawn over the level's extent (the 1st to 99th percentile of the
/// panels' positions, as the page does, so that an off-screen sentinel does not squash the
/// rest). None when no keyframe holds an entity.
pub(super) fn world_graph(world: &Json, wc: &Json) -> Option<String> {
    let keyframes = wc["keyframes"].as_array()?;
    if keyframes
        .iter()
        .all(|k| k.as_array().is_none_or(Vec::is_empty))
    {
        return None;
    }
    let last = keyframes.len() - 1;
    let mut chosen: Vec<usize> = (1..=WORLD_PANELS)
        .map(|q| last * q / WORLD_PANELS)
        .collect();
    chosen.dedup();
    let step_ms = world["step_ms"].as_f64().unwrap_or(0.0);
    let types: Vec<&str> = wc["types"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t.as_str().unwrap_or("?"))
        .collect();
    let clipped: Vec<(u64, u64)> = wc["clipped"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c[0].as_u64()?, c[1].as_u64()?)))
        .collect();
    // Each entity as (id, type index, x, y), as the page's keyframes hold them.
    let rows = |k: usize| -> Vec<Placed> {
        let flat = keyframes[k].as_array().map_or(&[][..], Vec::as_slice);
        flat.chunks_exact(4)
            .map(|e| {
                let index = e[1].as_u64().unwrap_or(0) as usize;
                (
                    e[0].as_u64().unwrap_or(0),
                    index,
                    e[2].as_f64(),
                    e[3].as_f64(),
                )
            })
            .collect()
    };
    let panels: Vec<(usize, Vec<_>)> = chosen.iter().map(|&k| (k, rows(k))).collect();
    let extent = |pick: fn(&Placed) -> Option<f64>| {
        let mut v: Vec<f64> = panels
            .iter()
            .flat_map(|(_, r)| r.iter().filter_map(pick))
            .collect();
        v.sort_by(f64::total_cmp);
        let (lo, hi) = match v.len() {
            0 => (0.0, 1.0),
            n => (v[n / 100], v[(n * 99).div_ceil(100) - 1]),
        };
        if hi > lo {
            (lo, hi)
        } else {
            (lo - 1.0, lo + 1.0)
        }
    };
    let (x0, x1) = extent(|r| r.2);
    let (y0, y1) = extent(|r| r.3);
    let id = wc["id"].as_u64().unwrap_or(0);
    let columns = 2;
    let grid_rows = panels.len().div_ceil(columns);
    let width = LEFT + columns as f64 * (PANEL_WIDTH + 24.0) + LEGEND_WIDTH;
    let height = (TOP + grid_rows as f64 * (PANEL_HEIGHT + PANEL_TITLE + 16.0) + 8.0)
        .max(TOP + PANEL_TITLE + 16.0 * types.len() as f64 + 8.0);
    let mut svg = Svg::new(
        width,
        height,
        &format!(
            "conversation {id}: entities held, as rtype-inspect world FILE --at T rebuilds them"
        ),
    );
    const PAD: f64 = 12.0;
    for (n, (k, entities)) in panels.iter().enumerate() {
        let left = LEFT + (n % columns) as f64 * (PANEL_WIDTH + 24.0);
        let top = TOP + (n / columns) as f64 * (PANEL_HEIGHT + PANEL_TITLE + 16.0) + PANEL_TITLE;
        let t = format!("{:.3}", *k as f64 * step_ms / 1000.0);
        let held = match clipped.iter().find(|c| c.0 == *k as u64) {
            Some((_, held)) => format!(
                "{held} entities held, the first {} by id kept",
                entities.len()
            ),
            None => format!("{} entities held", entities.len()),
        };
        let unplaced = entities
            .iter()
            .filter(|e| e.2.is_none() || e.3.is_none())
            .count();
        let note = if unplaced > 0 {
            format!(" ({unplaced} without a position, not drawn)")
        } else {
            String::new()
        };
        svg.text(left, top - 6.0, "start", &format!("{t} s: {held}{note}"));
        let _ = writeln!(
            svg.out,
            "<g class=\"world-panel\" data-t=\"{t}\" data-entities=\"{}\">\
<rect x=\"{left}\" y=\"{top:.1}\" width=\"{PANEL_WIDTH}\" height=\"{PANEL_HEIGHT}\" fill=\"#fbfcfd\" stroke=\"#888\"/>",
            entities.len()
        );
        for &(entity, index, x, y) in entities {
            let (Some(x), Some(y)) = (x, y) else {
                continue;
            };
            let cx = left + PAD + (x.clamp(x0, x1) - x0) / (x1 - x0) * (PANEL_WIDTH - 2.0 * PAD);
            let cy = top + PAD + (y.clamp(y0, y1) - y0) / (y1 - y0) * (PANEL_HEIGHT - 2.0 * PAD);
            let kind = escape(types.get(index).copied().unwrap_or("?"));
            let _ = writeln!(
                svg.out,
                "<circle class=\"entity\" data-id=\"{entity}\" data-x=\"{x}\" data-y=\"{y}\" data-type=\"{kind}\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"3\" fill=\"{}\"><title>{kind} {entity} ({x}, {y})</title></circle>",
                PALETTE[index % PALETTE.len()]
            );
        }
        svg.out.push_str("</g>\n");
    }
    // The legend: every type name of the conversation, in the page's colours.
    let x = LEFT + columns as f64 * (PANEL_WIDTH + 24.0);
    for (index, name) in types.iter().enumerate() {
        let y = TOP + PANEL_TITLE + 16.0 * index as f64;
        let _ = write!(
            svg.out,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{}\"/>",
            x + 6.0,
            y + 6.0,
            PALETTE[index % PALETTE.len()]
        );
        svg.label(x + 16.0, y + 10.0, "start", name);
    }
    Some(svg.finish())
}
