// Strata console: polls the admin listener's /api/v1 JSON and draws tables and plots.
// Every name from the broker (topics, groups, client ids, hosts) enters the page as a text
// node (el() below never parses markup), so a name like <img onerror=...> shows as text.
'use strict';

const POLL_MS = 2000;
const COLORS = { messages_in: '#3461d1', messages_consumed: '#1f9d55', bytes_in: '#d9822b', bytes_out: '#8e44ad' };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === 'class') e.className = v; else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function link(href, text) { return el('a', { href }, text); }
function num(v) { return v === null || v === undefined ? '–' : Number(v).toLocaleString('en-US', { maximumFractionDigits: 1 }); }
function bytes(v) {
  if (v === null || v === undefined) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']; let i = 0; v = Number(v);
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : String(v)) + ' ' + u[i];
}
function td(v, field, cls) { return el('td', { 'data-field': field, class: cls }, v); }
function tdn(v, field) { return td(num(v), field, 'num'); }
function table(headers, rows, attrs) {
  return el('table', attrs, el('thead', {}, el('tr', {}, headers.map(h => el('th', {}, h)))), el('tbody', {}, rows));
}
function more(meta, what) {
  return meta.more > 0 ? el('p', { class: 'note' }, `showing ${meta.offset + 1}–${meta.offset + meta.limit} of ${meta.total} ${what}`) : null;
}

async function get(path) {
  const r = await fetch(path, { headers: { Accept: 'application/json' } });
  if (r.status === 404) return null;
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

// A sparkline as inline SVG: one polyline scaled to its own maximum.
function sparkline(values, color, label) {
  const w = 90, h = 18, ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'spark'); svg.setAttribute('width', w); svg.setAttribute('height', h);
  svg.setAttribute('data-last', values.length ? values[values.length - 1] : 0);
  const title = document.createElementNS(ns, 'title');
  title.textContent = `${label}: ${num(values.length ? values[values.length - 1] : 0)}/s`;
  svg.appendChild(title);
  const max = Math.max(1e-9, ...values);
  const pts = values.map((v, i) => `${(i / Math.max(1, values.length - 1)) * w},${h - 1 - (v / max) * (h - 2)}`);
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', pts.join(' ') || `0,${h - 1} ${w},${h - 1}`);
  line.setAttribute('fill', 'none'); line.setAttribute('stroke', color); line.setAttribute('stroke-width', '1.2');
  svg.appendChild(line);
  return svg;
}

// The live plot: per-second rates on a canvas, two panels (records/s, bytes/s).
function plot(samples) {
  const c = el('canvas', { class: 'plot', id: 'throughput-plot', width: 720, height: 220 });
  const g = c.getContext('2d');
  const panels = [
    { keys: ['messages_in', 'messages_consumed'], unit: 'records/s', y: 0 },
    { keys: ['bytes_in', 'bytes_out'], unit: 'bytes/s', y: 110 },
  ];
  for (const p of panels) {
    const max = Math.max(1, ...samples.flatMap(s => p.keys.map(k => s[k])));
    g.fillStyle = '#5b6578'; g.font = '11px sans-serif';
    g.fillText(`${p.unit} (max ${num(max)})`, 6, p.y + 12);
    g.strokeStyle = '#e3e6eb'; g.beginPath(); g.moveTo(0, p.y + 105); g.lineTo(720, p.y + 105); g.stroke();
    for (const k of p.keys) {
      g.strokeStyle = COLORS[k]; g.lineWidth = 1.5; g.beginPath();
      samples.forEach((s, i) => {
        const x = 720 - (samples.length - 1 - i) * (720 / 299);
        const y = p.y + 104 - (s[k] / max) * 86;
        if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
      });
      g.stroke();
    }
  }
  const last = samples.length ? samples[samples.length - 1] : {};
  for (const k of Object.keys(COLORS)) c.setAttribute('data-' + k.replace('_', '-'), last[k] || 0);
  const legend = el('div', { class: 'legend', id: 'throughput-legend' }, Object.keys(COLORS).map(k =>
    el('span', {}, el('i', { style: null, 'data-color': k }), `${k.replace('_', ' ')}: `,
      el('b', { 'data-field': k }, k.startsWith('bytes') ? bytes(Math.round(last[k] || 0)) + '/s' : num(last[k] || 0) + '/s'))));
  // Colour swatches via CSSOM (the CSP forbids inline style attributes).
  legend.querySelectorAll('i').forEach(i => { i.style.background = COLORS[i.getAttribute('data-color')]; });
  return el('div', {}, c, legend);
}

const views = {
  async overview() {
    const [c, t] = await Promise.all([get('/api/v1/cluster'), get('/api/v1/throughput')]);
    const q = c.quorum;
    return [
      el('h2', {}, 'Cluster'),
      el('table', { class: 'kv', id: 'cluster' }, el('tbody', {},
        el('tr', {}, td('cluster id'), td(c.cluster_id, 'cluster_id')),
        el('tr', {}, td('this node'), td(c.node_id, 'node_id')),
        el('tr', {}, td('active controller'), td(c.controller_id ?? 'none', 'controller_id')),
        el('tr', {}, td('quorum leader / epoch'), td(`${q.leader_id ?? 'none'} / ${q.leader_epoch}`, 'quorum_leader')),
        el('tr', {}, td('metadata high watermark'), td(num(q.high_watermark), 'quorum_high_watermark')),
        el('tr', {}, td('topics / partitions'), td(`${c.topic_count} / ${c.partition_count}`, 'counts')),
        el('tr', {}, td('offline partitions'), td(c.offline_partition_count, 'offline', c.offline_partition_count ? 'bad' : 'ok')))),
      el('h2', {}, 'Controller quorum voters'),
      table(['id', 'address', 'role', 'log end offset'], q.voters.map(v => el('tr', { 'data-voter': v.id },
        td(v.id, 'id'), td(v.address, 'address'), td(v.id === q.leader_id ? 'leader' : 'follower', 'role'), tdn(v.log_end_offset, 'log_end_offset')))),
      el('h2', {}, 'Brokers'),
      table(['id', 'endpoints', 'rack', 'state', 'epoch'], c.brokers.map(b => el('tr', { 'data-broker': b.id },
        td(b.id, 'id'), td(b.endpoints.map(e => `${e.listener}://${e.host}:${e.port}`).join(', '), 'endpoints'), td(b.rack ?? '', 'rack'),
        td(b.fenced ? 'fenced' : (b.in_controlled_shutdown ? 'shutting down' : (b.unreachable ? 'unreachable from here' : 'registered, unfenced')), 'state', b.fenced || b.unreachable ? 'bad' : 'ok'),
        td(b.epoch, 'epoch'))), { id: 'brokers' }),
      el('h2', {}, 'Throughput (sampled by the broker each second, last 5 minutes)'),
      plot(t.samples),
    ];
  },

  async topics() {
    const d = await get('/api/v1/topics?limit=200');
    return [
      el('h2', {}, `Topics (${d.total})`),
      table(['topic', 'partitions', 'RF', 'under-replicated', 'records', 'size', 'produce rate', 'consume rate'],
        d.topics.map(t => el('tr', { 'data-topic': t.name },
          el('td', { 'data-field': 'name' }, link('#/topics/' + encodeURIComponent(t.name), t.name)),
          tdn(t.partitions, 'partitions'), tdn(t.replication_factor, 'replication_factor'),
          td(t.under_replicated, 'under_replicated', t.under_replicated ? 'bad' : null),
          tdn(t.records, 'records'), td(bytes(t.size_bytes), 'size', 'num'),
          el('td', { 'data-field': 'produce_rate' }, sparkline(t.produce_rate, COLORS.messages_in, 'records in')),
          el('td', { 'data-field': 'consume_rate' }, sparkline(t.consume_rate, COLORS.messages_consumed, 'records consumed')))), { id: 'topics' }),
      more(d, 'topics'),
    ];
  },

  async topic(name) {
    const t = await get('/api/v1/topics/' + encodeURIComponent(name));
    if (!t) return [el('h2', {}, 'Unknown topic'), el('p', { id: 'not-found' }, name)];
    return [
      el('h2', {}, 'Topic ', el('span', { id: 'topic-name' }, t.name)),
      el('p', { class: 'note' }, `id ${t.topic_id}, ${t.partition_count} partitions; offsets and sizes are the leader's replica (column "from")`),
      table(['partition', 'leader', 'epoch', 'replicas', 'ISR', 'log start', 'log end', 'high watermark', 'size', 'from'],
        t.partitions.map(p => el('tr', { 'data-partition': p.partition },
          tdn(p.partition, 'partition'), td(p.leader, 'leader', p.leader < 0 ? 'bad' : null), tdn(p.leader_epoch, 'leader_epoch'),
          td(p.replicas.join(','), 'replicas'), td(p.isr.join(','), 'isr', p.isr.length < p.replicas.length ? 'bad' : null),
          tdn(p.log_start_offset, 'log_start_offset'), tdn(p.log_end_offset, 'log_end_offset'),
          tdn(p.high_watermark, 'high_watermark'), td(bytes(p.size_bytes), 'size', 'num'),
          td(p.figures_from === null ? 'unknown' : p.figures_from, 'figures_from', p.figures_from === null ? 'bad' : null))), { id: 'partitions' }),
    ];
  },

  async groups() {
    const d = await get('/api/v1/groups?limit=200');
    return [
      el('h2', {}, `Consumer groups (${d.total})`),
      table(['group', 'coordinator', 'state', 'protocol type', 'members', 'partitions', 'total lag', 'max lag'],
        d.groups.map(g => el('tr', { 'data-group': g.group_id },
          el('td', { 'data-field': 'group_id' }, link('#/groups/' + encodeURIComponent(g.group_id), g.group_id)),
          tdn(g.coordinator, 'coordinator'), td(g.state, 'state'), td(g.protocol_type, 'protocol_type'), tdn(g.members, 'members'), tdn(g.partitions, 'partitions'),
          tdn(g.lag_sum, 'lag_sum'), tdn(g.lag_max, 'lag_max'))), { id: 'groups' }),
      more(d, 'groups'),
    ];
  },

  async group(id) {
    const g = await get('/api/v1/groups/' + encodeURIComponent(id));
    if (!g) return [el('h2', {}, 'Unknown group'), el('p', { id: 'not-found' }, id)];
    const assigned = m => m.assignment ? m.assignment.map(a => `${a.topic}: ${a.partitions.join(',')}`).join('; ') : `${m.assignment_bytes} bytes`;
    return [
      el('h2', {}, 'Group ', el('span', { id: 'group-id' }, g.group_id)),
      el('p', {}, 'state ', el('b', { id: 'group-state' }, g.state), `, protocol ${g.protocol_type || '–'}/${g.protocol || '–'}, coordinator `,
        el('span', { id: 'group-coordinator' }, g.coordinator)),
      el('h2', {}, 'Members'),
      table(['member', 'client id', 'host', 'assignment'], g.members.map(m => el('tr', { 'data-member': m.member_id },
        td(m.member_id, 'member_id'), td(m.client_id, 'client_id'), td(m.host, 'host'), td(assigned(m), 'assignment'))), { id: 'members' }),
      el('h2', {}, 'Offsets and lag'),
      table(['topic', 'partition', 'committed offset', 'high watermark', 'lag'], g.offsets.map(o =>
        el('tr', { 'data-topic': o.topic, 'data-partition': o.partition },
          td(o.topic, 'topic'), tdn(o.partition, 'partition'), tdn(o.committed_offset, 'committed_offset'),
          tdn(o.high_watermark, 'high_watermark'), tdn(o.lag, 'lag'))), { id: 'offsets' }),
    ];
  },
};

function current() {
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  const arg = parts.length > 1 ? decodeURIComponent(parts.slice(1).join('/')) : null;
  if (parts[0] === 'topics') return arg === null ? ['topics', 'topics'] : ['topics', 'topic', arg];
  if (parts[0] === 'groups') return arg === null ? ['groups', 'groups'] : ['groups', 'group', arg];
  return ['overview', 'overview'];
}

let generation = 0;
async function render() {
  const mine = ++generation;
  const [nav, view, arg] = current();
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.id === 'nav-' + nav);
  const status = document.getElementById('status');
  try {
    const nodes = await views[view](arg);
    if (mine !== generation) return;
    document.getElementById('main').replaceChildren(...nodes.filter(n => n));
    status.textContent = 'updated ' + new Date().toLocaleTimeString();
    document.body.setAttribute('data-rendered', String(Date.now()));
  } catch (e) {
    if (mine === generation) status.textContent = 'error: ' + e.message;
  }
}

window.addEventListener('hashchange', render);
render();
setInterval(render, POLL_MS);
