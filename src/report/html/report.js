// rtype-inspect report: draws the embedded profile documents with uPlot. Every chart drawn is
// listed in #report-status (data-charts: "name:points;…"), and any script error in
// data-errors, so that a headless browser's DOM dump tells whether the page worked.
"use strict";
(function () {
  const status = document.getElementById("report-status");
  const errors = [];
  const charts = [];
  // The IO graph of each conversation, by "file-conversation": [uPlot, conversation, frame list].
  const ioCharts = new Map();
  const clickable = {};
  window.onerror = function (message, source, line) {
    errors.push(message + " (line " + line + ")");
    status.setAttribute("data-errors", errors.join(" | "));
  };
  window.addEventListener("unhandledrejection", (e) => window.onerror(String(e.reason), "", 0));
  // The page's Content-Security-Policy refuses every fetch: an attempt is an error too.
  document.addEventListener("securitypolicyviolation", (e) => window.onerror("blocked " + e.blockedURI + " (" + e.violatedDirective + ")", "", 0));

  const data = JSON.parse(document.getElementById("report-data").textContent);
  const app = document.getElementById("app");
  const tabs = document.getElementById("tabs");
  const width = Math.max(480, Math.min(1180, (window.innerWidth || 1280) - 80));
  const palette = data.palette;

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  const num = (v, d) => (v === null || v === undefined ? "–" : Number(v).toFixed(d === undefined ? 0 : d));
  function record(name, points) {
    charts.push(name + ":" + points);
    status.setAttribute("data-charts", charts.join(";"));
  }
  function table(head, rows) {
    const t = el("table", {}, el("tr", {}, ...head.map((h) => el("th", {}, h))));
    for (const r of rows) t.append(el("tr", {}, ...r.map((c) => (c instanceof Node && c.tagName === "TD" ? c : el("td", {}, c)))));
    return t;
  }
  const td = (v, cls) => el("td", { class: cls || "n" }, v);

  // A horizontal budget line on a chart, red over the buckets where `broken(i)`.
  function budgetPlugin(scale, value, broken, label) {
    return {
      hooks: {
        draw: (u) => {
          const ctx = u.ctx, y = u.valToPos(value, scale, true);
          if (!(y >= u.bbox.top && y <= u.bbox.top + u.bbox.height)) return;
          ctx.save();
          ctx.lineWidth = 2 * devicePixelRatio;
          ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
          const xs = u.data[0];
          for (let i = 0; i < xs.length; i++) {
            const x0 = u.valToPos(xs[i], "x", true);
            const x1 = i + 1 < xs.length ? u.valToPos(xs[i + 1], "x", true) : u.bbox.left + u.bbox.width;
            ctx.strokeStyle = broken(i) ? "#d11" : "#2a2";
            ctx.beginPath(); ctx.moveTo(x0, y); ctx.lineTo(x1, y); ctx.stroke();
          }
          ctx.setLineDash([]);
          ctx.fillStyle = "#333";
          ctx.textAlign = "left";
          ctx.textBaseline = "bottom";
          ctx.font = 11 * devicePixelRatio + "px system-ui, sans-serif";
          ctx.fillText(label, u.bbox.left + 4, y - 4 * devicePixelRatio);
          ctx.restore();
        },
      },
    };
  }

  function plot(name, target, opts, series) {
    const u = new uPlot(Object.assign({ width: width, height: 260 }, opts), series, target);
    const points = series.slice(1).reduce((n, s) => n + s.filter((v) => v !== null && v !== undefined).length, 0);
    record(name, points);
    return u;
  }

  // Bars drawn by uPlot from [from, to, count] histogram buckets.
  // Log buckets are drawn one bar each, at their index, labelled by their lower bound.
  function histogram(name, target, title, unit, buckets) {
    const xs = buckets.map((_, i) => i), ys = buckets.map((b) => b.count ?? b.entities);
    if (!xs.length) { target.append(el("p", { class: "note" }, title + ": no samples")); return; }
    const bound = (i) => (buckets[i] ? Number(buckets[i].from.toPrecision(3)) : "");
    plot(name, target, {
      title: title, width: Math.min(560, width), height: 200,
      scales: { x: { time: false, range: [-0.5, xs.length - 0.5] }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [{ label: unit + " (from)", values: (u, splits) => splits.map((i) => (Number.isInteger(i) ? bound(i) : "")) }, {}],
      series: [{ label: unit, value: (u, i) => (buckets[i] ? bound(i) + "–" + buckets[i].to : "–") },
        { label: "count", fill: "#4f8ad866", stroke: "#4f8ad8", points: { show: false }, paths: uPlot.paths.bars({ size: [0.8, 60] }) }],
    }, [xs, ys]);
  }

  // Sorted CSS bars (labels can be long, uPlot's axes would cut them).
  function bars(name, target, title, rows, format) {
    const box = el("div", { class: "bars" }, el("h4", {}, title));
    const max = Math.max(0, ...rows.map((r) => r[1]));
    for (const [label, value, extra] of rows) {
      const pct = max > 0 ? (100 * value) / max : 0;
      box.append(el("div", { class: "bar", title: label + ": " + format(value) + (extra ? " " + extra : "") },
        el("span", { class: "label" }, label),
        el("span", { class: "track" }, el("div", { class: "fill", style: "width:" + pct.toFixed(1) + "%" })),
        el("span", { class: "value" }, format(value))));
    }
    if (!rows.length) box.append(el("p", { class: "note" }, "none"));
    target.append(box);
    record(name, rows.length);
  }

  // Lists a bucket's frames in `target`; the line of frame `hit`, if kept, is marked.
  function frameList(file, conv, bucket, seconds, target, hit) {
    const b = (file.buckets || []).find((x) => x.id === conv.id);
    target.textContent = "";
    target.removeAttribute("data-hit");
    const from = (bucket * seconds).toFixed(3), to = ((bucket + 1) * seconds).toFixed(3);
    if (!b || b.datagrams[bucket] === 0) {
      target.append(el("div", {}, "Bucket " + bucket + " (" + from + "–" + to + " s): no datagram of conversation " + conv.id));
      return;
    }
    const lines = b.lines[bucket];
    target.setAttribute("data-bucket", bucket);
    target.setAttribute("data-lines", lines.length);
    target.append(
      el("div", {}, "Bucket " + bucket + " (" + from + "–" + to + " s): frames " + b.first[bucket] + "–" + b.last[bucket] +
        ", " + b.datagrams[bucket] + " datagrams of conversation " + conv.id +
        (lines.length < b.datagrams[bucket] ? "; the first " + lines.length + " shown, all with " : "; also with ")),
      el("code", {}, "rtype-inspect packets " + file.file + " --conversation " + conv.id + " --frames " + b.first[bucket] + "-" + b.last[bucket]),
      el("pre", {}, ...lines.map((l) => (hit !== undefined && l.split(" ", 1)[0] === String(hit)
        ? el("mark", {}, l + "\n") : l + "\n"))));
    if (hit !== undefined) {
      const kept = lines.some((l) => l.split(" ", 1)[0] === String(hit));
      target.setAttribute("data-hit", kept ? hit : "");
      if (!kept) target.insertBefore(el("div", {}, "Frame " + hit + " is not among the lines kept: the command above lists it."), target.lastChild);
    }
  }

  // The bucket of a conversation's frame: the one whose frames span it, else the last one
  // that began before it.
  function bucketOf(file, conv, frame) {
    const b = (file.buckets || []).find((x) => x.id === conv.id);
    if (!b) return null;
    let best = null;
    for (let i = 0; i < b.first.length; i++) {
      if (b.first[i] === null) continue;
      if (b.first[i] <= frame && frame <= b.last[i]) return i;
      if (b.first[i] <= frame) best = i;
    }
    return best;
  }

  // A click on a time chart lists the frames of the bucket under the cursor.
  function listOnClick(u, file, conv, seconds, frames) {
    u.over.addEventListener("click", () => {
      const i = u.cursor.idx;
      if (i !== null && i !== undefined) frameList(file, conv, i, seconds, frames);
    });
    u.rtypeFrames = frames;
  }

  // A finding's frame: the IO graph of its conversation zooms on its bucket (5 buckets either
  // side) and lists the bucket's frames, the finding's marked.
  function showFrame(file, convId, frame) {
    const entry = ioCharts.get(file.index + "-" + convId);
    if (!entry) return null;
    const [u, conv, frames] = entry;
    const seconds = file.profile.series.interval_ms / 1000;
    const bucket = bucketOf(file, conv, frame);
    if (bucket === null) return null;
    const xs = u.data[0];
    u.setScale("x", { min: xs[Math.max(0, bucket - 5)], max: xs[Math.min(xs.length - 1, bucket + 5)] });
    frameList(file, conv, bucket, seconds, frames, frame);
    frames.scrollIntoView({ block: "center" });
    return bucket;
  }
  function frameLink(file, frame, convId) {
    const a = el("a", { href: "#", class: "frame", "data-frame": frame, "data-conversation": convId }, String(frame));
    a.addEventListener("click", (e) => { e.preventDefault(); showFrame(file, convId, frame); });
    return a;
  }

  function ioGraph(file, conv, target, seconds, xs) {
    const s = conv.series, p = file.profile;
    const kbps = (bytes) => (bytes * 8) / 1000 / seconds;
    const rows = s.bytes.slice().sort((a, b) => b.values.reduce((x, y) => x + y, 0) - a.values.reduce((x, y) => x + y, 0));
    // Stacked: each series holds the sum of itself and those below it; hover shows its own value.
    const stacked = [], raw = [];
    let below = xs.map(() => 0);
    for (const r of rows) {
      const own = r.values.map(kbps);
      below = below.map((v, i) => v + own[i]);
      stacked.push(below.slice()); raw.push(own);
    }
    const series = [{ label: "s" }];
    const arrays = [xs];
    // Draw the top of the stack first so that each lower band paints over it.
    for (let k = rows.length - 1; k >= 0; k--) {
      const c = palette[k % palette.length];
      series.push({ label: rows[k].name + " " + (rows[k].direction === "client_to_server" ? "→" : "←"),
        stroke: c, fill: c + "99", width: 1, points: { show: false }, value: ((rk) => (u, v, si, i) => (i === null || i === undefined ? "–" : raw[rk][i].toFixed(2) + " kbit/s"))(k) });
      arrays.push(stacked[k]);
    }
    const dg = xs.map((_, i) => (s.datagrams.client_to_server[i] + s.datagrams.server_to_client[i]) / seconds);
    series.push({ label: "datagrams/s", scale: "dg", stroke: "#111", width: 1.5, dash: [4, 3] });
    arrays.push(dg);
    const marks = [["findings", s.findings, 0.96, "#d11"], ["losses", s.losses, 0.9, "#e8833a"], ["duplicates", s.duplicates, 0.84, "#8a6fd1"]];
    for (const [label, counts, y, color] of marks) {
      series.push({ label: label, scale: "ev", stroke: color, paths: () => null, points: { show: true, size: 8, fill: color },
        value: ((c) => (u, v, si, i) => (i === null || i === undefined ? "–" : String(c[i])))(counts) });
      arrays.push(counts.map((n) => (n > 0 ? y : null)));
    }
    const plugins = [];
    const budget = file.budgets.snapshot_kbps_per_client;
    if (budget !== undefined) {
      const snap = s.bytes.filter((r) => /snapshot|state/i.test(r.name) && r.direction !== "client_to_server");
      const snapKbps = xs.map((_, i) => kbps(snap.reduce((n, r) => n + r.values[i], 0)));
      plugins.push(budgetPlugin("y", budget, (i) => snapKbps[i] > budget, "budget: snapshots ≤ " + budget + " kbit/s"));
    }
    const frames = el("div", { class: "frames", "data-conversation": conv.id }, "Click a bucket to list its frames.");
    const u = plot("io-" + file.index + "-" + conv.id, target, {
      title: "IO graph: kbit/s per message type (stacked), datagrams/s; findings, losses, duplicates marked",
      scales: { x: { time: false }, ev: { range: [0, 1] } },
      axes: [{ label: "s" }, { label: "kbit/s" }, { scale: "dg", side: 1, label: "datagrams/s", grid: { show: false } }],
      series: series, plugins: plugins,
    }, arrays);
    listOnClick(u, file, conv, seconds, frames);
    ioCharts.set(file.index + "-" + conv.id, [u, conv, frames]);
    target.append(frames);
    return u;
  }

  function timeLine(name, target, title, unit, xs, ys, extra, plugins) {
    const series = [{ label: "s" }, { label: title, stroke: "#4f8ad8", width: 1.5, spanGaps: false }];
    const arrays = [xs, ys];
    for (const [label, values, color] of extra || []) {
      series.push({ label: label, stroke: color, width: 1, dash: [2, 3] });
      arrays.push(values);
    }
    return plot(name, target, {
      title: title, scales: { x: { time: false } }, axes: [{ label: "s" }, { label: unit }],
      series: series, plugins: plugins || [],
    }, arrays);
  }

  function conversation(file, conv, target) {
    const p = file.profile, seconds = p.series.interval_ms / 1000;
    const box = el("div", { class: "conv" });
    const layout = conv.layout ? ", snapshots read with " + conv.layout : "";
    box.append(el("h3", {}, "Conversation " + conv.id + ": " + (conv.dialect || "?") + " " + (conv.client || "?") + " → " + (conv.server || "?") + layout));
    box.append(el("p", { class: "note" }, conv.datagrams + " datagrams, " + conv.udp_bytes + " UDP payload bytes over " +
      num(conv.duration_s, 3) + " s; snapshots " + num(conv.snapshots.hz, 2) + " Hz, " + num(conv.snapshots.kbps, 2) +
      " kbit/s (peak " + num(conv.snapshots.peak.kbps, 2) + "); RTT p95 " + num(conv.distributions.rtt_ms.p95, 2) + " ms"));
    target.append(box);
    const s = conv.series;
    if (s) {
      const xs = s.snapshots.map((_, i) => i * seconds);
      ioGraph(file, conv, box, seconds, xs);
      const nominal = 1000 / file.snapshot_hz, tol = (nominal * file.snapshot_tolerance) / 100;
      const gapPlugins = [];
      const hzMin = file.budgets.snapshot_hz_min;
      if (hzMin !== undefined) {
        const limit = 1000 / hzMin;
        gapPlugins.push(budgetPlugin("y", limit, (i) => s.snapshot_gap_ms_max[i] !== null && s.snapshot_gap_ms_max[i] > limit,
          "budget: ≥ " + hzMin + " Hz (gap ≤ " + limit.toFixed(1) + " ms)"));
      }
      const row1 = el("div", { class: "row" });
      box.append(row1);
      const gap = timeLine("gap-" + file.index + "-" + conv.id, row1, "snapshot gap (mean and longest per bucket)", "ms", xs, s.snapshot_gap_ms_mean,
        [["longest gap", s.snapshot_gap_ms_max, "#d9534f"], [file.snapshot_hz + " Hz", xs.map(() => nominal), "#3aa676"], ["jitter band +", xs.map(() => nominal + tol), "#9bc34a"],
         ["jitter band −", xs.map(() => nominal - tol), "#9bc34a"]], gapPlugins);
      histogram("gap-hist-" + file.index + "-" + conv.id, row1, "snapshot gaps", "ms", conv.distributions.snapshot_gap_ms.buckets);
      const gapFrames = el("div", { class: "frames" }, "Click a bucket of the snapshot gap to list its frames.");
      box.append(gapFrames);
      listOnClick(gap, file, conv, seconds, gapFrames);
      const rttPlugins = [];
      const rttMax = file.budgets.rtt_p95_ms_max;
      if (rttMax !== undefined) {
        rttPlugins.push(budgetPlugin("y", rttMax, (i) => s.rtt_ms_mean[i] !== null && s.rtt_ms_mean[i] > rttMax, "budget: RTT p95 ≤ " + rttMax + " ms"));
      }
      const row2 = el("div", { class: "row" });
      box.append(row2);
      const rtt = timeLine("rtt-" + file.index + "-" + conv.id, row2, "RTT (mean per bucket)", "ms", xs, s.rtt_ms_mean, [], rttPlugins);
      histogram("rtt-hist-" + file.index + "-" + conv.id, row2, "round trips", "ms", conv.distributions.rtt_ms.buckets);
      const rttFrames = el("div", { class: "frames" }, "Click a bucket of the RTT to list its frames.");
      box.append(rttFrames);
      listOnClick(rtt, file, conv, seconds, rttFrames);
      if (file.index === 0 && !clickable.gap) Object.assign(clickable, { gap: [gap, s.snapshot_gap_ms_mean], rtt: [rtt, s.rtt_ms_mean] });
    } else {
      box.append(el("p", { class: "note" }, "No time series: only the first conversations get them (see the profile's limits)."));
    }
    const row3 = el("div", { class: "row" });
    box.append(row3);
    const types = conv.snapshots.entity_types.slice().sort((a, b) => b.bytes - a.bytes);
    bars("types-" + file.index + "-" + conv.id, row3, "snapshot bytes by " + conv.snapshots.grouped_by, types.map((t) => [t.label, t.bytes, t.entities + " entities, " + num(t.updates_per_s, 1) + " updates/s"]), (v) => v + " B");
    const fields = conv.snapshots.fields.slice().sort((a, b) => b.bytes - a.bytes);
    bars("fields-" + file.index + "-" + conv.id, row3, "snapshot bytes by field", fields.map((f) => [f.field, f.bytes, "(" + f.kind + ")"]), (v) => v + " B");
    const row4 = el("div", { class: "row" });
    box.append(row4);
    const ratios = conv.messages.filter((m) => m.compression_ratio !== null).sort((a, b) => b.compression_ratio - a.compression_ratio);
    bars("compression-" + file.index + "-" + conv.id, row4, "compression ratio per message type (decompressed / wire payload)",
      ratios.map((m) => [m.name + (m.direction === "client_to_server" ? " →" : " ←"), m.compression_ratio]), (v) => v.toFixed(3) + "×");
    const ch = conv.chunking;
    row4.append(el("div", {}, el("h4", {}, "chunking"), table(["figure", "value"], [
      ["chunk datagrams", td(ch.datagrams)], ["chunk bytes", td(ch.udp_bytes)], ["largest chunk", td(ch.largest)],
      ["sets", td(ch.sets)], ["sets/s", td(num(ch.sets_per_s, 2))], ["chunks per set", td(num(ch.chunks_per_set, 2))],
      ["most chunks", td(ch.most_chunks)]])));
    timelines(file, conv, box);
    worldView(file, conv, box);
  }

  // The world view: the entities the client held at each keyframe (as `world --at` shows
  // them), drawn on a canvas at their positions; a slider and play/pause move through the
  // keyframes and the IO graph's cursor with them; findings are marked under the slider; a
  // click on an entity lists its timeline (as `entity` does), its frames linked to the IO graph.
  // Each view is in window.rtypeWorld by "file-conversation", its drawn entities in `drawn`,
  // its play button, marks and label for the self tests. A keyframe past the entities' bound
  // says in its label how many were held and how many are kept.
  const worlds = (window.rtypeWorld = {});
  function worldView(file, conv, box) {
    const w = file.world, wc = w && w.conversations.find((c) => c.id === conv.id);
    if (!wc || !wc.keyframes.length) return;
    const key = file.index + "-" + conv.id, step = w.step_ms / 1000, last = wc.keyframes.length - 1;
    const b = w.bounds;
    let note = "The world as the client held it, rebuilt as rtype-inspect world FILE --at T does: " + wc.keyframes.length +
      " keyframes, one every " + w.step_ms + " ms (at most " + b.max_keyframes + " a conversation)";
    if (w.cut !== null) note += "; kept up to " + ((w.cut - 1) * step).toFixed(3) + " s only, the page's bound of " + b.max_rows + " entities over every keyframe reached";
    if (wc.clipped.length) note += "; " + wc.clipped.length + " keyframes held more than " + b.entities_per_keyframe + " entities: the first by id are drawn";
    box.append(el("h4", {}, "world view"), el("p", { class: "note" }, note + ". Click an entity for its timeline."));
    // The level's extent: the 1st to 99th percentile of every position, so that an outlier
    // (an off-screen sentinel) does not squash the rest; entities beyond it sit at the edge.
    const xs = [], ys = [];
    for (const f of wc.keyframes) for (let i = 0; i < f.length; i += 4) {
      if (f[i + 2] !== null) xs.push(f[i + 2]);
      if (f[i + 3] !== null) ys.push(f[i + 3]);
    }
    const extent = (v) => {
      v.sort((a, b) => a - b);
      const lo = v.length ? v[Math.floor(v.length * 0.01)] : 0, hi = v.length ? v[Math.ceil(v.length * 0.99) - 1] : 1;
      return hi > lo ? [lo, hi] : [lo - 1, lo + 1];
    };
    const [x0, x1] = extent(xs), [y0, y1] = extent(ys);
    const cw = Math.min(width, 960), chh = 400, pad = 16;
    const canvas = el("canvas", { class: "world", width: cw * devicePixelRatio, height: chh * devicePixelRatio, style: "width:" + cw + "px;height:" + chh + "px", "data-world": key });
    const play = el("button", { type: "button" }, "play");
    const slider = el("input", { type: "range", min: 0, max: last, value: 0, step: 1, class: "world-slider" });
    const label = el("span", { class: "note" });
    const marks = el("div", { class: "world-marks" });
    const timeline = el("div", { class: "frames" }, "Click an entity to list its timeline.");
    box.append(canvas, el("div", { class: "world-controls" }, play, el("div", { class: "world-track" }, slider, marks), label), timeline);
    const view = { drawn: [], keyframe: 0, seek: null, play: play, markList: marks, label: label };
    worlds[key] = view;
    // Keyframe index to the entities it held, for those past the bound (drawn: the first by id).
    const clipped = new Map(wc.clipped);
    const px = (x) => pad + (Math.min(x1, Math.max(x0, x)) - x0) / (x1 - x0) * (cw - 2 * pad);
    const py = (y) => pad + (Math.min(y1, Math.max(y0, y)) - y0) / (y1 - y0) * (chh - 2 * pad);
    function draw(k) {
      view.keyframe = k;
      slider.value = k;
      const f = wc.keyframes[k], ctx = canvas.getContext("2d");
      ctx.setTransform(devicePixelRatio, 0, 0, devicePixelRatio, 0, 0);
      ctx.clearRect(0, 0, cw, chh);
      ctx.strokeStyle = "#d5d9de"; ctx.strokeRect(0.5, 0.5, cw - 1, chh - 1);
      ctx.font = "10px system-ui, sans-serif"; ctx.textBaseline = "middle";
      view.drawn = [];
      let unplaced = 0;
      for (let i = 0; i < f.length; i += 4) {
        const e = { id: f[i], type: wc.types[f[i + 1]], x: f[i + 2], y: f[i + 3] };
        view.drawn.push(e);
        if (e.x === null || e.y === null) { unplaced++; continue; }
        ctx.fillStyle = palette[f[i + 1] % palette.length];
        ctx.beginPath(); ctx.arc(px(e.x), py(e.y), 4, 0, 2 * Math.PI); ctx.fill();
        ctx.fillText(e.type + " " + e.id, px(e.x) + 6, py(e.y));
      }
      canvas.setAttribute("data-drawn", view.drawn.map((e) => [e.id, e.x, e.y, e.type].join(",")).join(";"));
      const t = k * step;
      const held = clipped.has(k) ? clipped.get(k) + " entities held, the first " + view.drawn.length + " by id kept" : view.drawn.length + " entities held";
      label.textContent = t.toFixed(3) + " s: " + held + (unplaced ? " (" + unplaced + " without a position, not drawn)" : "");
      const io = ioCharts.get(key);
      if (io) io[0].setCursor({ left: io[0].valToPos(t, "x"), top: io[0].over.clientHeight / 2 });
    }
    // The keyframe of time `t` (seconds): the last at or before it.
    view.seek = (t) => draw(Math.max(0, Math.min(last, Math.floor(t / step + 1e-6))));
    slider.addEventListener("input", () => draw(Number(slider.value)));
    let timer = null;
    play.addEventListener("click", () => {
      if (timer !== null) { clearInterval(timer); timer = null; play.textContent = "play"; return; }
      if (view.keyframe >= last) draw(0);
      play.textContent = "pause";
      timer = setInterval(() => {
        if (view.keyframe >= last) { clearInterval(timer); timer = null; play.textContent = "play"; return; }
        draw(view.keyframe + 1);
      }, Math.max(40, Math.min(w.step_ms, 250)));
    });
    const span = Math.max(step, last * step);
    for (const [t, frame, rule] of wc.findings) {
      const m = el("span", { class: "world-mark", style: "left:" + Math.min(100, (100 * t) / span).toFixed(2) + "%", title: rule + " at frame " + frame + " (" + t.toFixed(3) + " s)" });
      m.addEventListener("click", () => view.seek(t));
      marks.append(m);
    }
    if (wc.findings_more) marks.setAttribute("title", wc.findings_more + " later findings not marked");
    canvas.addEventListener("click", (ev) => {
      const r = canvas.getBoundingClientRect(), cx = ev.clientX - r.left, cy = ev.clientY - r.top;
      let best = null, dist = 10;
      for (const e of view.drawn) {
        if (e.x === null || e.y === null) continue;
        const d = Math.hypot(px(e.x) - cx, py(e.y) - cy);
        if (d <= dist) { best = e; dist = d; }
      }
      if (best) entityTimeline(file, conv, wc, best.id, timeline);
    });
    view.click = (id) => {
      const e = view.drawn.find((d) => d.id === id && d.x !== null && d.y !== null);
      if (!e) return false;
      const r = canvas.getBoundingClientRect();
      canvas.dispatchEvent(new MouseEvent("click", { clientX: r.left + px(e.x), clientY: r.top + py(e.y), bubbles: true }));
      return true;
    };
    record("world-" + key, wc.keyframes.length);
    draw(0);
  }

  // An entity's timeline, as `entity FILE ID --conversation N` lists it: each event with its
  // frame (a link to its line in the IO graph's frame list), time, tick, gap and changed fields.
  function entityTimeline(file, conv, wc, id, target) {
    target.textContent = "";
    target.setAttribute("data-entity", id);
    const t = wc.timelines[id];
    const command = el("code", {}, "rtype-inspect entity " + file.file + " " + id + " --conversation " + conv.id);
    if (!t) {
      target.append(el("div", {}, "Entity " + id + ": its timeline is not kept (only the first " + file.world.bounds.max_timelines + " entities a conversation are): "), command);
      target.setAttribute("data-events", "");
      return;
    }
    const rows = t.events.map(([frame, at, tick, what, life, gap, changed]) => [frameLink(file, frame, conv.id), td(at.toFixed(3)), td(tick === null ? "–" : tick),
      what + (/^spawn|unspawned/.test(what) ? " #" + life : ""), td(gap === null ? "" : gap.toFixed(3)), changed]);
    target.append(el("div", {}, "Entity " + id + ": " + t.lives + " lives" + (t.more ? "; " + t.more + " later events and updates not kept here, all listed by " : "; also listed by ")), command,
      table(["frame", "time s", "tick", "event", "gap ms", "changed"], rows));
    target.setAttribute("data-events", t.events.map((e) => e[0] + ":" + e[3]).join(";"));
  }

  // The entity timelines: a chosen entity's positions over time, spawns and destroys marked.
  function timelines(file, conv, box) {
    const list = conv.timelines || [];
    if (!list.length) return;
    const pick = el("select", {});
    list.forEach((t, i) => pick.append(el("option", { value: i }, "entity " + t.id + " (" + t.type + ", " + t.sampled_updates + " samples)")));
    const holder = el("div", {});
    box.append(el("h4", {}, "entity timeline "), pick, holder);
    // "every", "every 2nd", "every 4th"...: the stride of the samples kept.
    const everyNth = (n) => {
      if (n === 1) return "every";
      const tens = n % 100, ones = n % 10;
      const suffix = tens >= 11 && tens <= 13 ? "th" : ones === 1 ? "st" : ones === 2 ? "nd" : ones === 3 ? "rd" : "th";
      return "every " + n + suffix;
    };
    const draw = () => {
      holder.textContent = "";
      const t = list[Number(pick.value)];
      const xs = t.samples.map((s) => s[0]);
      const events = [];
      for (const at of t.spawns_s) events.push([at, "spawn", "#3aa676"]);
      for (const at of t.destroys_s) events.push([at, "destroy", "#d11"]);
      const marks = { hooks: { draw: (u) => {
        const ctx = u.ctx;
        ctx.save();
        ctx.textAlign = "left";
        ctx.textBaseline = "top";
        ctx.font = 11 * devicePixelRatio + "px system-ui, sans-serif";
        for (const [at, label, color] of events) {
          const x = u.valToPos(at, "x", true);
          ctx.fillStyle = color; ctx.fillRect(x - 1, u.bbox.top, 2 * devicePixelRatio, u.bbox.height);
          ctx.fillText(label, x + 3, u.bbox.top + 2);
        }
        ctx.restore();
      } } };
      plot("timeline-" + file.index + "-" + conv.id, holder, {
        title: "entity " + t.id + ": position (" + everyNth(t.stride) + " sampled update)",
        scales: { x: { time: false } }, axes: [{ label: "s" }, { label: "position" }],
        series: [{ label: "s" }, { label: "x", stroke: "#4f8ad8", points: { show: true, size: 3 } }, { label: "y", stroke: "#e8833a", points: { show: true, size: 3 } }],
        plugins: [marks],
      }, [xs, t.samples.map((s) => s[1]), t.samples.map((s) => s[2])]);
    };
    pick.addEventListener("change", draw);
    draw();
  }

  function findingsTable(file) {
    const p = file.profile;
    const rows = p.findings.map((f) => {
      const frames = file.finding_frames[f.id] || [];
      const cell = el("td", { "data-rule": f.id });
      frames.forEach((x, i) => cell.append(i ? ", " : "", frameLink(file, x.frame, x.conversation)));
      if (f.count > frames.length) cell.append(" …");
      return [el("td", { class: "sev-" + f.severity }, f.severity), el("td", {}, f.id), td(f.count), cell];
    });
    for (const b of file.breaks) {
      const cell = el("td", {}, frameLink(file, b.first_frame, b.conversation));
      if (b.first_frame !== b.last_frame) cell.append("–", frameLink(file, b.last_frame, b.conversation));
      rows.push([el("td", { class: "sev-error" }, "budget"), el("td", {}, b.id), td(1), cell]);
    }
    return rows.length ? table(["severity", "rule", "count", "frames (the first ones: click to see them in the IO graph)"], rows) : el("p", {}, "No finding.");
  }

  function budgetsTable(file) {
    const keys = Object.keys(file.budgets);
    if (!keys.length) return el("p", { class: "note" }, "No [budgets] in the configuration file (rtype-inspect.toml).");
    return table(["budget", "limit", "result"], keys.map((k) => {
      const broken = file.breaks.filter((b) => b.budget_key === k);
      return [k, td(file.budgets[k]), broken.length
        ? el("td", { class: "broken" }, broken.map((b) => "conversation " + b.conversation + ": " + b.comparison + " (frames " + b.first_frame + "–" + b.last_frame + ")").join("; "))
        : el("td", { class: "ok" }, "kept")];
    }));
  }

  function fileSection(file, index) {
    file.index = index;
    const p = file.profile, c = p.capture;
    const section = el("section", { class: "file", "data-file": file.file });
    section.append(el("h2", {}, file.file));
    section.append(el("p", {}, c.frames + " frames, " + c.datagrams + " protocol datagrams, " + c.other_udp + " other UDP over " +
      num(c.duration_s, 3) + " s" + (c.truncated ? " (truncated)" : "") + "; snapshot profile " + p.snapshot_profile +
      "; buckets of " + p.series.interval_ms + " ms" + (c.first_time ? "; from " + c.first_time : "")));
    section.append(el("h3", {}, "Conversations"), table(["#", "dialect", "client", "server", "datagrams", "UDP bytes", "duration s", "findings"],
      p.conversations.map((v) => [td(v.id), v.dialect || "?", v.client || "?", v.server || "?", td(v.datagrams), td(v.udp_bytes), td(num(v.duration_s, 3)),
        td(Object.values(v.findings).reduce((a, b) => a + b, 0))])));
    section.append(el("h3", {}, "Findings"), findingsTable(file));
    section.append(el("h3", {}, "Budgets"), budgetsTable(file));
    app.append(section);
    for (const conv of p.conversations) conversation(file, conv, section);
    return section;
  }

  const sections = data.files.map(fileSection);
  const buttons = sections.map((section, i) => {
    const b = el("button", { type: "button" }, data.files[i].file.split("/").pop());
    b.addEventListener("click", () => show(i));
    tabs.append(b);
    return b;
  });
  function show(i) {
    sections.forEach((s, k) => (s.hidden = k !== i));
    buttons.forEach((b, k) => b.classList.toggle("active", k === i));
  }
  show(0);

  // #selftest-click: on the first file's first conversation, places the cursor (as a mouse
  // move would) and clicks: on the IO graph's busiest bucket, the snapshot gap's and the RTT's
  // highest; then follows the first finding's first frame link. Records each bucket and the
  // frame list shown. uPlot sets its scales in a microtask after it is made: wait for them.
  setTimeout(selfTest, 0);
  function click(u, bucket) {
    // A user's click: move, press and release at one spot (uPlot takes a press and release
    // apart for a drag-zoom and swallows its click), then the click.
    const rect = u.over.getBoundingClientRect();
    const at = { clientX: rect.left + u.valToPos(u.data[0][bucket], "x"), clientY: rect.top + rect.height / 2, bubbles: true, button: 0 };
    for (const type of ["mousemove", "mousedown", "mouseup", "click"]) u.over.dispatchEvent(new MouseEvent(type, at));
    const list = u.rtypeFrames;
    return bucket + ":" + list.getAttribute("data-bucket") + ":" + list.getAttribute("data-lines");
  }
  const highest = (values) => values.indexOf(Math.max(...values.map((v) => (v === null ? -Infinity : v))));
  function selfTest() {
    // #selftest-world=T1,T2…&entity=ID: each time's drawn entities of the first file's
    // conversations (data-world-FILE-CONV-T, as the canvas's data-drawn), the IO cursor's
    // bucket, the marks; then a click on entity ID at the last time, its timeline's events.
    const world = /^#selftest-world=([0-9.,]+)(?:&entity=(\d+))?$/.exec(location.hash);
    if (world) {
      for (const [key, view] of Object.entries(worlds)) {
        if (!key.startsWith("0-")) continue;
        for (const t of world[1].split(",")) {
          view.seek(Number(t));
          const canvas = document.querySelector("canvas[data-world='" + key + "']");
          status.setAttribute("data-world-" + key + "-" + t, canvas.getAttribute("data-drawn"));
          status.setAttribute("data-world-label-" + key + "-" + t, view.label.textContent);
          const io = ioCharts.get(key);
          if (io) status.setAttribute("data-world-cursor-" + key + "-" + t, String(io[0].cursor.idx));
        }
        status.setAttribute("data-world-marks-" + key, String(view.markList.children.length));
        if (world[2] !== undefined && view.click(Number(world[2]))) {
          const list = document.querySelector("canvas[data-world='" + key + "']").parentNode.querySelector(".frames[data-entity]");
          status.setAttribute("data-world-entity-" + key, list.getAttribute("data-entity") + "=" + list.getAttribute("data-events"));
        }
      }
    }
    const play = /^#selftest-play=(\d+)&mark=(\d+)$/.exec(location.hash);
    const first = Object.entries(worlds).find(([key]) => key.startsWith("0-"));
    if (play && first) {
      selfTestPlay(first[0], first[1], Number(play[1]), Number(play[2]));
      return;
    }
    if (location.hash === "#selftest-click" && ioCharts.size) {
      const [u, conv] = ioCharts.values().next().value;
      const s = conv.series;
      status.setAttribute("data-click", click(u, highest(s.datagrams.client_to_server.map((n, i) => n + s.datagrams.server_to_client[i]))));
      for (const name of ["gap", "rtt"]) {
        if (clickable[name]) status.setAttribute("data-click-" + name, click(clickable[name][0], highest(clickable[name][1])));
      }
      const link = document.querySelector("section.file a.frame");
      if (link) {
        link.click();
        // uPlot applies a new scale in a microtask too.
        setTimeout(() => recordFinding(link), 0);
        return;
      }
    }
    done();
  }
  // #selftest-play=MS&mark=I: on the first file's first world view, as a user would: presses
  // play, MS milliseconds later pause, and MS later clicks finding mark I where it is drawn.
  // data-world-play holds "keyframe,IO cursor's bucket,button" before play, at the pause, right
  // after it and MS later; data-world-mark "mark under the pointer,keyframe,IO cursor|label".
  function selfTestPlay(key, view, ms, mark) {
    const io = ioCharts.get(key);
    const state = () => [view.keyframe, io ? io[0].cursor.idx : "", view.play.textContent].join(",");
    const steps = [state()];
    view.play.click();
    setTimeout(() => {
      steps.push(state());
      view.play.click();
      steps.push(state());
      setTimeout(() => {
        steps.push(state());
        status.setAttribute("data-world-play", steps.join(";"));
        const m = view.markList.children[mark];
        if (m) {
          m.scrollIntoView({ block: "center" });
          const r = m.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
          const hit = document.elementFromPoint(x, y);
          if (hit) hit.dispatchEvent(new MouseEvent("click", { clientX: x, clientY: y, bubbles: true, button: 0 }));
          const index = Array.prototype.indexOf.call(view.markList.children, hit);
          status.setAttribute("data-world-mark", [index, view.keyframe, io ? io[0].cursor.idx : ""].join(",") + "|" + view.label.textContent);
        }
        done();
      }, ms);
    }, ms);
  }
  // The end of the script: the milliseconds since the page began to load (parse, data, every
  // chart drawn), for BENCHMARKS.md.
  function done() {
    status.setAttribute("data-ms", Math.round(performance.now()));
    status.setAttribute("data-done", "1");
  }
  function recordFinding(link) {
    const entry = ioCharts.get("0-" + link.getAttribute("data-conversation"));
    const shown = entry ? [entry[2].getAttribute("data-bucket"), entry[2].getAttribute("data-hit"), entry[0].scales.x.min, entry[0].scales.x.max] : ["none"];
    status.setAttribute("data-click-finding", [link.closest("td").getAttribute("data-rule"), link.getAttribute("data-frame"),
      link.getAttribute("data-conversation"), ...shown].join(":"));
    done();
  }
})();
