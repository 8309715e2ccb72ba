// scenariomock dashboard: a client of the admin API, nothing more.
//
// Choices, and why:
//   - Routes: a virtual table. Only the rows in view (plus a margin) exist
//     in the DOM, and only those are fetched, a page of GET
//     /__admin/scenarios?offset=&limit= at a time, so 10,000 or 100,000
//     routes cost the same as 50.
//   - Hit counts: a route's runs (its hits: the times it ran) and its
//     requests (every one it took, as the journal lists them, with the
//     replays and refusals that did not run it), side by side and
//     labelled, so that neither looks like a miscount of the other.
//   - Reload status and hit counts: that same small page is fetched again
//     every second (not while the tab is hidden). It carries lastReload,
//     the version and the counts, and costs the server one bounded page. A
//     journal entry answered by a newer version asks for it at once.
//   - The journal: GET /__admin/requests?limit=500 once, then the live
//     tail GET /__admin/requests/stream?after=<last id> read with fetch()
//     as text/event-stream by hand: EventSource cannot send the
//     Authorization header, and a token in the URL would land in logs and
//     history. Rows are added at most once per animation frame and the
//     list keeps the newest MAX_ROWS: a busy journal cannot grow the DOM.
//     A reconnection starts again from the newest page (a restarted
//     server numbers its entries from 1). The filter box passes the
//     admin API's journal filters to both calls.
//   - The admin token (--admin-token): asked for on the first 401, kept in
//     sessionStorage (this tab only), sent as Authorization: Bearer.
//   - Everything the server sends is put in the page as text
//     (textContent), never as HTML.
'use strict';

const MAX_ROWS = 500;      // request rows kept in the DOM
const ROW_H = 40;          // px, the fixed height of a route row: two lines (see app.css)
const ROUTE_MARGIN = 100;  // routes fetched beyond those in view, each side
const POLL_MS = 1000;      // scenarios page (reload status, hits)
const STATE_MS = 2000;     // idempotency keys, collections and route states
const TOKEN_KEY = 'scenariomock.adminToken';

const $ = (id) => document.getElementById(id);

// ---- small DOM helpers -------------------------------------------------

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function pad(n, w) { return String(n).padStart(w, '0'); }

function clock(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  return `${pad(d.getHours(), 2)}:${pad(d.getMinutes(), 2)}:${pad(d.getSeconds(), 2)}.${pad(d.getMilliseconds(), 3)}`;
}

// when is clock() for today, else the date too (keys expire tomorrow).
function when(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '';
  if (d.toDateString() === new Date().toDateString()) return clock(iso).slice(0, 8);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1, 2)}-${pad(d.getDate(), 2)} ${clock(iso).slice(0, 8)}`;
}

function statusClass(status) {
  return 's' + Math.floor((status || 0) / 100);
}

let msgTimer = 0;
function say(text) {
  const m = $('action-msg');
  m.textContent = text;
  clearTimeout(msgTimer);
  msgTimer = setTimeout(() => { m.textContent = ''; }, 4000);
}

// ---- the admin API, with the token -------------------------------------

let memToken = ''; // when sessionStorage is unavailable

function getToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return memToken; }
}

function setToken(t) {
  memToken = t;
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
  } catch (e) { /* memToken holds it */ }
}

class AuthError extends Error {}

async function api(path, opts = {}) {
  const headers = new Headers(opts.headers || {});
  const t = getToken();
  if (t) headers.set('Authorization', 'Bearer ' + t);
  const res = await fetch(path, { ...opts, headers, cache: 'no-store', credentials: 'same-origin' });
  if (res.status === 401) {
    askToken(t ? 'The server refused this token.' : 'This server needs its admin token (--admin-token).');
    throw new AuthError('401');
  }
  return res;
}

async function apiJSON(path, opts) {
  const res = await api(path, opts);
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await problemText(res)}`);
  return res.json();
}

async function problemText(res) {
  try {
    const p = await res.json();
    return p.detail || p.title || '';
  } catch (e) { return res.statusText; }
}

// tokenNeeded stops the polls until the user gives a token: each would
// only be refused again.
let tokenNeeded = false;

function askToken(why) {
  tokenNeeded = true;
  $('token-panel').hidden = false;
  $('token-msg').textContent = why;
  setConn('down', 'admin token needed');
}

function setConn(cls, text) {
  const c = $('conn');
  c.className = 'pill ' + cls;
  c.textContent = text;
}

// ---- routes: a virtual table over the paged listing -------------------

const routes = {
  total: 0,
  byOrder: new Map(),   // order (1-based) -> route, for the fetched window only
  from: 0, to: 0,       // the fetched window, [from, to) as offsets
  want: null,           // the window the view needs next, or null
  inFlight: false,
  version: 0,
  rowPool: [],
};

function viewWindow() {
  const vp = $('routes-viewport');
  const first = Math.floor(vp.scrollTop / ROW_H);
  const count = Math.ceil(vp.clientHeight / ROW_H) + 1;
  return { first, last: Math.min(first + count, routes.total) };
}

function renderRoutes() {
  // The spacer first: the viewport's height follows it (up to its CSS
  // max-height), and the window in view depends on that height.
  $('routes-spacer').style.height = (routes.total * ROW_H) + 'px';
  const { first, last } = viewWindow();
  const rows = $('routes-rows');
  rows.style.transform = `translateY(${first * ROW_H}px)`;
  const n = Math.max(0, last - first);
  while (routes.rowPool.length < n) {
    const r = el('div', 'route routes-grid');
    for (const c of ['order', 'name', 'method', 'path', 'hits', 'src', 'reqs']) r.appendChild(el('span', c));
    routes.rowPool.push(r);
  }
  while (rows.childElementCount > n) rows.removeChild(rows.lastElementChild);
  for (let i = 0; i < n; i++) {
    const row = routes.rowPool[i];
    if (row.parentNode !== rows) rows.appendChild(row);
    fillRoute(row, first + i + 1, routes.byOrder.get(first + i + 1));
  }
  if (first < routes.from || last > routes.to) {
    needRoutes(first, last);
  }
}

function fillRoute(row, order, r) {
  const [o, name, method, path, hits, src, requests] = row.children;
  row.dataset.order = order;
  o.textContent = order;
  if (!r) {
    row.className = 'route routes-grid pending';
    name.textContent = '…';
    method.textContent = path.textContent = hits.textContent = src.textContent = requests.textContent = '';
    row.title = requests.title = '';
    return;
  }
  row.className = 'route routes-grid' + (r.hits > 0 ? ' hit' : '');
  name.textContent = r.name;
  method.textContent = r.methods.length ? r.methods.join(' ') : 'ANY';
  path.textContent = r.path || '(any path)';
  hits.textContent = r.hits;
  fillRequests(requests, r.requests || { total: 0, replayed: 0, refused: 0 });
  // The file's name and line:col, cut from the left so the line stays in
  // view; the whole path is in the tooltip.
  const file = r.source.slice(r.source.lastIndexOf('/') + 1);
  src.textContent = file.length > 20 ? '…' + file.slice(-19) : file;
  const lines = [`${r.name} (${r.source})`];
  if (r.when.length) lines.push('when: ' + r.when.join('; '));
  if (r.responses && r.responses.length) {
    lines.push('responds: ' + r.responses.map((x) => x.fault ? 'fault ' + x.fault : String(x.status || '')).join(', '));
  }
  if (r.sequence) lines.push(`sequence: ${r.sequence.calls} call(s), then ${r.sequence.after}`);
  row.title = lines.join('\n');
}

// fillRequests shows a route's requests: the total, then the replays and
// refusals among them, which did not run it (so are not in its runs).
function fillRequests(cell, q) {
  clear(cell);
  cell.appendChild(el('span', 'total', q.total));
  const parts = [];
  if (q.replayed) parts.push(`${q.replayed} replayed`);
  if (q.refused) parts.push(`${q.refused} refused`);
  if (parts.length) cell.appendChild(el('span', 'split', ' (' + parts.join(', ') + ')'));
  cell.title = `${q.total} request(s) took this route: ${q.replayed} idempotent replay(s) answered from the store and ${q.refused} refusal(s) answered before it ran, neither counted in its runs`;
}

function needRoutes(first, last) {
  routes.want = { first, last };
  if (!routes.inFlight) fetchRoutes();
}

// fetchRoutes gets the page around the wanted window: one request at a
// time, the latest want wins.
async function fetchRoutes() {
  const w = routes.want || viewWindow();
  routes.want = null;
  const offset = Math.max(0, w.first - ROUTE_MARGIN);
  const limit = Math.min(10000, Math.max(0, w.last - w.first) + 2 * ROUTE_MARGIN);
  routes.inFlight = true;
  try {
    const st = await apiJSON(`/__admin/scenarios?offset=${offset}&limit=${limit}`);
    applyStatus(st, offset, limit);
    setConnOK();
  } catch (e) {
    if (!(e instanceof AuthError)) setConn('down', 'server unreachable');
  } finally {
    routes.inFlight = false;
  }
  if (routes.want) fetchRoutes();
}

function applyStatus(st, offset, limit) {
  routes.total = st.page.total;
  routes.byOrder.clear();
  for (const r of st.routes) routes.byOrder.set(r.order, r);
  routes.from = offset;
  // A short page is the last one: it covers everything to the end.
  routes.to = st.routes.length < limit ? Infinity : offset + st.routes.length;
  routes.version = st.version;
  renderReload(st);
  renderSummary(st);
  renderRoutes();
}

let shownReload = '';

function renderReload(st) {
  const box = $('reload');
  const lr = st.lastReload;
  // Redrawn only when it changed, so that the problems can be selected
  // and copied while the poll goes on.
  const key = JSON.stringify([lr, st.version]);
  if (key === shownReload) return;
  shownReload = key;
  const list = $('reload-errors');
  clear(list);
  if (lr.ok) {
    box.className = 'reload ok';
    $('reload-head').textContent = `Last reload ${clock(lr.at)}: ok, serving version ${st.version}.`;
    return;
  }
  box.className = 'reload bad';
  $('reload-head').textContent = `Reload failed at ${clock(lr.at)}: ${lr.error || 'see the problems below'}`;
  for (const p of lr.errors) {
    const li = el('li');
    // file:line:col: message — the place is what one acts on first.
    const m = /^(.+?:\d+:\d+):\s?([\s\S]*)$/.exec(p);
    if (m) {
      li.appendChild(el('span', 'loc', m[1]));
      li.appendChild(document.createTextNode(': ' + m[2]));
    } else {
      li.textContent = p;
    }
    list.appendChild(li);
  }
}

function renderSummary(st) {
  const s = $('summary');
  clear(s);
  const part = (label, value) => {
    s.appendChild(document.createTextNode(label + ' '));
    s.appendChild(el('b', null, value));
    s.appendChild(document.createTextNode(' · '));
  };
  part('version', st.version);
  part('loaded', clock(st.loadedAt));
  part('files', st.files.length);
  part('routes', st.page.total);
  part('unmatched', st.unmatched);
  s.appendChild(document.createTextNode(st.source ? 'from ' + st.source : ''));
  s.title = st.files.map((f) => `${f.path}: ${f.routes} route(s)`).join('\n');
  $('routes-count').textContent = `${st.page.total} route${st.page.total === 1 ? '' : 's'}`;
  const fb = $('fallback');
  fb.hidden = !st.fallback;
  if (st.fallback) {
    fb.textContent = 'Fallback (when nothing matches): ' + (st.fallback.fault ? 'fault ' + st.fallback.fault : 'status ' + st.fallback.status);
  }
}

function setConnOK() {
  if (journal.live) setConn('live', 'live');
  else if (journal.unavailable) setConn('', 'no journal stream');
  else setConn('', 'connecting');
}

// ---- the journal: initial page, then the live tail --------------------

const journal = {
  pending: [],     // entries received and not yet drawn, oldest first
  drawScheduled: false,
  paused: false,
  lastId: 0,
  received: 0,
  live: false,
  unavailable: false,
  ctrl: null,      // aborts the current stream
  filter: '',      // the journal filter as typed: name=value pairs joined by &
  generation: 0,   // bumped to end a tail loop (token change)
};

function onEntry(e) {
  if (e.id > journal.lastId) journal.lastId = e.id;
  journal.received++;
  journal.pending.push(e);
  // Only the newest MAX_ROWS can ever be shown: drop the rest now, in
  // batches, so a burst cannot grow memory while the tab is in the
  // background (no animation frames) or paused.
  if (journal.pending.length > 2 * MAX_ROWS) journal.pending = journal.pending.slice(-MAX_ROWS);
  if (e.version > routes.version && !routes.inFlight) needRoutes(viewWindow().first, viewWindow().last);
  scheduleDraw();
}

function scheduleDraw() {
  if (journal.drawScheduled || journal.paused) return;
  journal.drawScheduled = true;
  requestAnimationFrame(drawEntries);
}

function drawEntries() {
  journal.drawScheduled = false;
  if (journal.paused) return;
  const list = $('requests');
  const batch = journal.pending.slice(-MAX_ROWS);
  journal.pending = [];
  const frag = document.createDocumentFragment();
  for (let i = batch.length - 1; i >= 0; i--) frag.appendChild(entryRow(batch[i]));
  list.insertBefore(frag, list.firstChild);
  while (list.childElementCount > MAX_ROWS) list.removeChild(list.lastElementChild);
  countRequests();
}

function countRequests() {
  const shown = $('requests').childElementCount;
  const which = journal.filter ? ' matching the filter' : '';
  $('requests-count').textContent = `${shown} shown (newest ${MAX_ROWS} kept), ${journal.received} received${which}`;
  $('pause').textContent = journal.paused ? `Resume (${journal.pending.length} waiting)` : 'Pause';
}

function entryRow(e) {
  const d = el('details', 'req');
  d.dataset.id = e.id;
  d.dataset.path = e.path;
  d.dataset.route = e.route || '';
  const s = el('summary');
  s.appendChild(el('span', 'time', clock(e.time)));
  s.appendChild(el('span', 'method', e.method));
  s.appendChild(el('span', 'path', e.path + (e.query ? '?' + e.query : '')));
  s.appendChild(el('span', 'status ' + statusClass(e.status), e.status || (e.fault ? 'fault' : '—')));
  let what = e.route || 'no route matched';
  if (e.idempotency) what += ' · ' + e.idempotency;
  s.appendChild(el('span', e.matched ? 'route' : 'route miss', what));
  s.appendChild(el('span', 'dur', e.durationMs.toFixed(1) + ' ms'));
  d.appendChild(s);
  // The detail is built on first open only: 500 rows of headers and
  // bodies nobody looks at would cost more than the rows themselves.
  d._entry = e;
  d.addEventListener('toggle', () => {
    if (d.open && d._entry) {
      d.appendChild(entryDetail(d._entry));
      d._entry = null;
    }
  });
  return d;
}

function entryDetail(e) {
  const box = el('div', 'detail');
  const facts = [];
  if (e.matched) facts.push(['Matched route', `${e.route} (scenarios version ${e.version})`]);
  else if (e.route === '(fallback)') facts.push(['Matched route', `none: the fallback answered (version ${e.version})`]);
  else facts.push(['Matched route', `none (version ${e.version})`]);
  facts.push(['Status', e.status ? String(e.status) : 'no HTTP answer']);
  if (e.fault) facts.push(['Fault', e.fault + (e.faultAfter ? ' after ' + e.faultAfter : '')]);
  if (e.delayMs) facts.push(['Delay', e.delayMs.toFixed(1) + ' ms']);
  if (e.idempotency) facts.push(['Idempotency', e.idempotency]);
  if (e.session) facts.push(['Session', e.session]);
  facts.push(['Duration', e.durationMs.toFixed(2) + ' ms']);
  facts.push(['Arrived', new Date(e.time).toISOString()]);
  if (e.query) facts.push(['Query', e.query]);
  box.appendChild(table(facts));

  if (!e.matched && e.nearMisses && e.nearMisses.length) {
    box.appendChild(el('h3', null, 'Near misses'));
    const ul = el('ul', 'near-misses');
    for (const n of e.nearMisses) {
      const li = el('li');
      li.appendChild(el('b', null, n.route));
      li.appendChild(document.createTextNode(': '));
      li.appendChild(el('span', 'miss-reason', n.reason));
      ul.appendChild(li);
    }
    box.appendChild(ul);
  }

  box.appendChild(el('h3', null, 'Request headers'));
  box.appendChild(headersTable(e.headers));
  box.appendChild(el('h3', null, `Request body (${e.bodySize} bytes${e.bodyTruncated ? ', cut at the journal limit' : ''})`));
  box.appendChild(bodyBlock(e, 'body request-body'));
  answerDetail(box, e);
  return box;
}

// answerDetail shows the answer the request got: sent, sent in part, or
// made and lost to a fault (the journal keeps it all the same), or why
// there was none.
function answerDetail(box, e) {
  const a = e.response;
  const sec = el('div', 'answer');
  box.appendChild(sec);
  if (!a) {
    sec.appendChild(el('h3', null, 'Response'));
    let why = 'No answer was made: the client left before it, or the server stopped.';
    if (e.fault) why = `No answer was made: the fault ${e.fault} struck at ${e.faultAfter || 'arrival'}, before the route ran.`;
    sec.appendChild(el('p', 'muted no-answer', why));
    return;
  }
  let head = 'Response';
  if (a.lost) head = 'Response: lost';
  else if (e.fault) head = 'Response: sent in part';
  sec.appendChild(el('h3', null, head));
  if (a.lost) {
    sec.appendChild(el('p', 'answer-lost', `Lost: the route ran and made this answer, then the fault ${e.fault}${e.faultAfter ? ' (after ' + e.faultAfter + ')' : ''} broke the connection before any of it was sent. The client got no status; a retry with the same Idempotency-Key gets it as a replay.`));
  } else if (e.fault) {
    sec.appendChild(el('p', 'answer-broken', `The fault ${e.fault} sent part of this answer, then broke it.`));
  }
  sec.appendChild(table([['Status', `${a.status} ${statusText(a.status)}`.trim()]]));
  sec.appendChild(el('h3', null, 'Response headers'));
  sec.appendChild(headersTable(a.headers));
  if (a.streamed) {
    sec.appendChild(el('h3', null, 'Response body'));
    sec.appendChild(el('p', 'muted', 'Streamed from the upstream as it came: not kept.'));
    return;
  }
  sec.appendChild(el('h3', null, `Response body (${a.bodySize} bytes${a.bodyTruncated ? ', cut at the journal limit' : ''})`));
  sec.appendChild(bodyBlock(a, 'body response-body'));
}

function headersTable(h) {
  const names = Object.keys(h || {}).sort();
  return names.length ? table(names.map((n) => [n, h[n].join(', ')])) : el('p', 'muted', 'none');
}

// bodyBlock shows a journaled body (a request's or an answer's): as
// text, pretty when it is JSON, or its base64 when it is not UTF-8.
function bodyBlock(b, cls) {
  if (b.body !== undefined && b.body !== '') return el('pre', cls, prettyBody(b.body));
  if (b.bodyBase64) {
    const d = el('div');
    d.appendChild(el('p', 'muted', 'Not UTF-8; base64:'));
    d.appendChild(el('pre', cls, b.bodyBase64));
    return d;
  }
  return el('p', 'muted', 'none');
}

// statusText is the reason phrase of the statuses a mock commonly sends.
function statusText(code) {
  return ({
    200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 301: 'Moved Permanently', 302: 'Found', 304: 'Not Modified',
    400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
    408: 'Request Timeout', 409: 'Conflict', 413: 'Content Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Content',
    429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
  })[code] || '';
}

function prettyBody(text) {
  if (text.length > 256 * 1024) return text;
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
}

function table(rows) {
  const t = el('table');
  for (const [k, v] of rows) {
    const tr = el('tr');
    tr.appendChild(el('td', null, k));
    tr.appendChild(el('td', null, v));
    t.appendChild(tr);
  }
  return t;
}

// filterParams turns the filter as typed ("matched=false & route=create
// order") into query parameters, the same on the list and the stream.
// Values may hold spaces (route names do), so only & separates pairs.
function filterParams() {
  const p = new URLSearchParams();
  for (const raw of journal.filter.split('&')) {
    const part = raw.trim();
    if (!part) continue;
    const eq = part.indexOf('=');
    if (eq <= 0) throw new FilterError(`"${part}" is not name=value (for example matched=false or status=4xx)`);
    p.append(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const q = p.toString();
  return q ? '&' + q : '';
}

class FilterError extends Error {}

// loadJournal draws the newest page of the journal. It returns false
// when there is nothing to tail: the journal is off, or the server
// refused the filter (its reason is shown).
async function loadJournal(gen) {
  let params;
  try { params = filterParams(); } catch (e) {
    $('journal-msg').textContent = e.message;
    return false;
  }
  const res = await api(`/__admin/requests?limit=${MAX_ROWS}${params}`);
  if (res.status === 404 || res.status === 405 || res.status === 400) {
    // 404: --journal-size 0, or a server from before the journal; 400:
    // a filter the server refused, with the parameter named.
    $('journal-msg').textContent = (await problemText(res)) || `The journal answered ${res.status}.`;
    return false;
  }
  if (!res.ok) throw new Error(`/__admin/requests: ${res.status}`);
  const data = await res.json();
  if (gen !== journal.generation) return true; // restarted meanwhile
  for (const e of data.requests || []) onEntry(e);
  return true;
}

// tail follows the stream until the generation changes, reconnecting
// after the last ID seen, so a dropped connection loses nothing the
// journal still keeps.
async function tail(gen) {
  let backoff = 500;
  let loaded = false;
  while (gen === journal.generation) {
    try {
      if (!loaded) {
        // From the journal's newest page each time, a reconnection
        // included: a restarted server numbers its entries from 1 again,
        // and resuming after our last ID would then show nothing.
        journal.lastId = 0;
        journal.received = 0;
        clearRows();
        if (!(await loadJournal(gen))) {
          journal.unavailable = true;
          setConnOK();
          return;
        }
        loaded = true;
      }
      const ctrl = new AbortController();
      journal.ctrl = ctrl;
      const res = await api(`/__admin/requests/stream?after=${journal.lastId}${filterParams()}`, {
        signal: ctrl.signal, headers: { Accept: 'text/event-stream' },
      });
      if (!res.ok || !res.body) throw new Error(`stream: ${res.status}`);
      journal.live = true;
      setConn('live', 'live');
      backoff = 500;
      await readEvents(res.body, (ev) => {
        if (ev.event === 'request' && gen === journal.generation) onEntry(JSON.parse(ev.data));
      });
    } catch (e) {
      if (e instanceof AuthError) return; // askToken restarts
    }
    loaded = false;
    journal.live = false;
    if (gen !== journal.generation) return;
    setConn('down', 'reconnecting');
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 5000);
  }
}

// readEvents parses text/event-stream (the WHATWG HTML "event stream
// interpretation") from body and calls onEvent for each event.
async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let data = [];
  let event = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      let line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length) onEvent({ event: event || 'message', data: data.join('\n') });
        data = [];
        event = '';
        continue;
      }
      if (line.startsWith(':')) continue; // a comment: keep-alive
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let v = colon < 0 ? '' : line.slice(colon + 1);
      if (v.startsWith(' ')) v = v.slice(1);
      if (field === 'data') data.push(v);
      else if (field === 'event') event = v;
      // id: the entry carries its id; retry: we keep our own backoff.
    }
  }
}

function startJournal() {
  journal.generation++;
  if (journal.ctrl) journal.ctrl.abort();
  journal.live = false;
  journal.unavailable = false;
  setConn('', 'connecting');
  $('journal-msg').textContent = '';
  tail(journal.generation);
}

function clearRows() {
  journal.pending = [];
  clear($('requests'));
  countRequests();
}

// ---- idempotency keys and collections ---------------------------------

async function refreshState() {
  try {
    const [idem, coll, health, states] = await Promise.all([
      apiJSON('/__admin/idempotency?limit=100'),
      apiJSON('/__admin/collections'),
      apiJSON('/__admin/health'),
      apiJSON(`/__admin/states?limit=${STATE_ROWS}`),
    ]);
    renderIdem(idem);
    renderColl(coll);
    renderUsage(health.usage);
    renderStates(states);
  } catch (e) { /* the routes poll reports the connection */ }
}

// renderUsage shows the bytes the stored answers and items take, which
// --idempotency-max-bytes and --collections-max-bytes bound (absent when
// the store does not say, or does not answer).
function renderUsage(u) {
  for (const [id, n] of [['idem-bytes', u && u.idempotencyBytes], ['coll-bytes', u && u.collectionBytes]]) {
    const span = $(id);
    span.hidden = n === undefined;
    span.textContent = n === undefined ? '' : '· ' + size(n) + ' stored';
  }
}

function size(n) {
  if (n < 1024) return n + ' B';
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KiB';
  return (n / (1024 * 1024)).toFixed(1) + ' MiB';
}

function renderIdem(d) {
  const body = $('idem-rows');
  clear(body);
  $('idem-count').textContent = d.total > d.keys.length ? `${d.keys.length} of ${d.total} (oldest first)` : String(d.total);
  for (const k of d.keys) {
    const tr = el('tr');
    tr.appendChild(el('td', null, k.group));
    const key = el('td', null, k.key);
    if (k.scope) key.title = 'scope ' + k.scope;
    tr.appendChild(key);
    tr.appendChild(el('td', null, k.state));
    tr.appendChild(el('td', 'num', k.status || ''));
    tr.appendChild(el('td', 'num', k.replays));
    tr.appendChild(el('td', null, when(k.expires)));
    body.appendChild(tr);
  }
  if (!d.keys.length) {
    const td = el('td', 'empty', 'No idempotency keys.');
    td.colSpan = 6;
    body.appendChild(el('tr')).appendChild(td);
  }
}

function renderColl(d) {
  const body = $('coll-rows');
  clear(body);
  $('coll-count').textContent = `${d.items} of at most ${d.maxItems} items`;
  for (const c of d.collections) {
    const tr = el('tr', 'coll' + (c.name === coll.name ? ' selected' : ''));
    tr.dataset.name = c.name;
    tr.title = `Browse the items of ${c.name}`;
    tr.appendChild(el('td', null, c.name));
    tr.appendChild(el('td', 'num', c.items));
    tr.addEventListener('click', () => openCollection(c.name));
    body.appendChild(tr);
  }
  if (!d.collections.length) {
    const td = el('td', 'empty', 'No stored items.');
    td.colSpan = 2;
    body.appendChild(el('tr')).appendChild(td);
  }
  // The collection open in the browser changed size: show its page again.
  if (coll.name) {
    const c = d.collections.find((x) => x.name === coll.name);
    const n = c ? c.items : 0;
    if (n !== coll.total && !coll.inFlight) loadItems();
  }
}

// ---- route states ------------------------------------------------------
//
// GET /__admin/states?limit=STATE_ROWS: the first states set, then
// a Started row for each name routes use with none set. Reset is DELETE
// /__admin/states/{name}?session=&key=, naming exactly that one.

const STATE_ROWS = 100;

function renderStates(d) {
  const body = $('states-rows');
  clear(body);
  const n = d.total;
  $('states-count').textContent = n > d.states.length ? `${d.states.length} of ${n} set` : `${n} set`;
  for (const st of d.states) {
    const tr = el('tr', 'state');
    tr.dataset.name = st.name;
    tr.dataset.key = st.key || '';
    if (st.session) tr.title = 'session ' + st.session;
    tr.appendChild(el('td', null, st.name));
    tr.appendChild(el('td', null, st.key || ''));
    tr.appendChild(el('td', 'value', st.value));
    const b = el('button', null, 'Reset');
    b.type = 'button';
    b.title = `Set ${st.name}${st.key ? ' ' + st.key : ''} back to ${d.started}`;
    b.addEventListener('click', () => resetState(st));
    tr.appendChild(el('td')).appendChild(b);
    body.appendChild(tr);
  }
  const set = new Set(d.states.map((st) => st.name));
  for (const name of d.names) {
    if (set.has(name)) continue;
    const tr = el('tr', 'state started');
    tr.dataset.name = name;
    tr.appendChild(el('td', null, name));
    tr.appendChild(el('td', 'empty', 'every key'));
    tr.appendChild(el('td', 'value', d.started));
    tr.appendChild(el('td'));
    body.appendChild(tr);
  }
  if (!body.firstChild) {
    const td = el('td', 'empty', 'No route has a state.');
    td.colSpan = 4;
    body.appendChild(el('tr')).appendChild(td);
  }
}

async function resetState(st) {
  const q = new URLSearchParams({ session: st.session || '', key: st.key || '' });
  const what = st.name + (st.key ? ' ' + st.key : '');
  try {
    const res = await api(`/__admin/states/${encodeURIComponent(st.name)}?${q}`, { method: 'DELETE' });
    if (!res.ok) { say('Reset failed: ' + await problemText(res)); return; }
    say(`State ${what} reset.`);
    refreshState();
  } catch (e) {
    if (!(e instanceof AuthError)) say('Reset failed: ' + e.message);
  }
}

// ---- browsing a collection's items --------------------------------------
//
// GET /__admin/collections/{name}?offset=&limit=, a page of COLL_PAGE items
// in insertion order; a click on one shows its body whole.

const COLL_PAGE = 20;
const coll = { name: '', offset: 0, total: 0, items: [], selected: '', inFlight: false };

function openCollection(name) {
  coll.name = name;
  coll.offset = 0;
  coll.selected = '';
  for (const tr of $('coll-rows').querySelectorAll('tr.coll')) tr.classList.toggle('selected', tr.dataset.name === name);
  $('coll-browse').hidden = false;
  loadItems();
}

function closeCollection() {
  coll.name = '';
  $('coll-browse').hidden = true;
  for (const tr of $('coll-rows').querySelectorAll('tr.coll')) tr.classList.remove('selected');
}

async function loadItems() {
  const name = coll.name;
  coll.inFlight = true;
  try {
    const d = await apiJSON(`/__admin/collections/${encodeURIComponent(name)}?offset=${coll.offset}&limit=${COLL_PAGE}`);
    if (name !== coll.name) return; // another was opened meanwhile
    if (d.items.length === 0 && coll.offset > 0 && d.total > 0) {
      // The page emptied (items deleted, a reset): back to the last one.
      coll.offset = Math.max(0, Math.floor((d.total - 1) / COLL_PAGE) * COLL_PAGE);
      coll.inFlight = false;
      return loadItems();
    }
    coll.total = d.total;
    coll.items = d.items;
    $('coll-msg').textContent = '';
    renderItems();
  } catch (e) {
    if (!(e instanceof AuthError)) $('coll-msg').textContent = e.message;
  } finally {
    coll.inFlight = false;
  }
}

function renderItems() {
  $('coll-name').textContent = coll.name;
  const n = coll.items.length;
  $('coll-range').textContent = n ? `items ${coll.offset + 1}–${coll.offset + n} of ${coll.total}` : `no items (of ${coll.total})`;
  $('coll-prev').disabled = coll.offset === 0;
  $('coll-next').disabled = coll.offset + n >= coll.total;
  const body = $('coll-items');
  clear(body);
  for (const it of coll.items) {
    const tr = el('tr', it.id === coll.selected ? 'selected' : null);
    tr.dataset.id = it.id;
    tr.appendChild(el('td', 'id', it.id));
    tr.appendChild(el('td', 'preview', JSON.stringify(it.body)));
    tr.addEventListener('click', () => showItem(it));
    body.appendChild(tr);
  }
  if (!n) {
    const td = el('td', 'empty', 'No items on this page.');
    td.colSpan = 2;
    body.appendChild(el('tr')).appendChild(td);
  }
  const shown = coll.items.find((it) => it.id === coll.selected);
  if (shown) showItem(shown); else $('coll-item').hidden = true;
}

function showItem(it) {
  coll.selected = it.id;
  for (const tr of $('coll-items').querySelectorAll('tr')) tr.classList.toggle('selected', tr.dataset.id === it.id);
  $('coll-item-id').textContent = `${coll.name} / ${it.id}`;
  $('coll-item-body').textContent = JSON.stringify(it.body, null, 2);
  $('coll-item').hidden = false;
}

function pageItems(delta) {
  coll.offset = Math.max(0, coll.offset + delta * COLL_PAGE);
  loadItems();
}

// ---- webhook attempts --------------------------------------------------
//
// The last HOOK_ROWS attempts of GET /__admin/webhooks, then each new one
// from GET /__admin/webhooks/stream?after=<last seq>, newest on top.

const HOOK_ROWS = 100;
const hooks = { generation: 0, ctrl: null, lastSeq: 0, shown: 0 };

function hookRow(a) {
  const tr = el('tr', 'hook ' + a.outcome);
  tr.dataset.event = a.eventId;
  tr.dataset.outcome = a.outcome;
  tr.dataset.seq = a.seq;
  tr.appendChild(el('td', null, clock(a.at)));
  tr.appendChild(el('td', null, a.type));
  tr.appendChild(el('td', null, a.eventId));
  tr.appendChild(el('td', null, a.endpoint));
  tr.appendChild(el('td', 'num', a.attempt || ''));
  tr.appendChild(el('td', 'outcome', a.outcome));
  const st = el('td', a.status ? statusClass(a.status) : null, a.error ? (a.status ? `${a.status} ${a.error}` : a.error) : (a.status || ''));
  tr.appendChild(st);
  tr.appendChild(el('td', null, a.fault || ''));
  return tr;
}

function onAttempt(a) {
  if (a.seq <= hooks.lastSeq) return;
  hooks.lastSeq = a.seq;
  const body = $('hooks-rows');
  if (body.querySelector('td.empty')) clear(body);
  body.insertBefore(hookRow(a), body.firstChild);
  while (body.children.length > HOOK_ROWS) body.removeChild(body.lastChild);
  hooks.shown++;
  $('hooks-count').textContent = String(body.children.length);
}

function clearHooks() {
  const body = $('hooks-rows');
  clear(body);
  hooks.shown = 0;
  $('hooks-count').textContent = '';
  const td = el('td', 'empty', 'No webhook attempts.');
  td.colSpan = 8;
  body.appendChild(el('tr')).appendChild(td);
}

async function tailHooks(gen) {
  let backoff = 500;
  while (gen === hooks.generation) {
    try {
      // From the log each time, a reconnection included: a restarted
      // server numbers its attempts from 1 again.
      const d = await apiJSON(`/__admin/webhooks?limit=${HOOK_ROWS}`);
      if (gen !== hooks.generation) return;
      hooks.lastSeq = 0;
      clearHooks();
      for (const a of d.attempts) onAttempt(a);
      const ctrl = new AbortController();
      hooks.ctrl = ctrl;
      const res = await api(`/__admin/webhooks/stream?after=${hooks.lastSeq}`, {
        signal: ctrl.signal, headers: { Accept: 'text/event-stream' },
      });
      if (!res.ok || !res.body) throw new Error(`webhook stream: ${res.status}`);
      backoff = 500;
      await readEvents(res.body, (ev) => {
        if (ev.event === 'attempt' && gen === hooks.generation) onAttempt(JSON.parse(ev.data));
      });
    } catch (e) {
      if (e instanceof AuthError) return; // askToken restarts
    }
    if (gen !== hooks.generation) return;
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 5000);
  }
}

function startHooks() {
  hooks.generation++;
  if (hooks.ctrl) hooks.ctrl.abort();
  tailHooks(hooks.generation);
}

// ---- health (the binary's build) ---------------------------------------

async function loadHealth() {
  try {
    const h = await apiJSON('/__admin/health');
    const b = $('build');
    if (h.build) {
      b.textContent = h.build;
      b.title = 'the scenariomock binary serving this page';
      b.hidden = false;
    }
  } catch (e) { /* shown by the routes poll */ }
}

// ---- actions -----------------------------------------------------------

async function reset() {
  try {
    const res = await api('/__admin/reset', { method: 'POST' });
    if (!res.ok) { say('Reset failed: ' + await problemText(res)); return; }
    clearRows();
    startHooks(); // the attempt log is empty now
    say('State reset.');
    refreshAll();
  } catch (e) {
    if (!(e instanceof AuthError)) say('Reset failed: ' + e.message);
  }
}

async function clearJournal() {
  try {
    const res = await api('/__admin/requests', { method: 'DELETE' });
    if (!res.ok) { say('Clear failed: ' + await problemText(res)); return; }
    clearRows();
    say('Journal cleared.');
  } catch (e) {
    if (!(e instanceof AuthError)) say('Clear failed: ' + e.message);
  }
}

function refreshAll() {
  needRoutes(viewWindow().first, viewWindow().last);
  refreshState();
}

// ---- polling: every second while the tab is visible --------------------

function every(ms, fn) {
  const tick = async () => {
    if (!document.hidden && !tokenNeeded) await fn();
    setTimeout(tick, ms);
  };
  setTimeout(tick, ms);
}

function init() {
  $('routes-viewport').addEventListener('scroll', () => {
    if (!routes.scrollScheduled) {
      routes.scrollScheduled = true;
      requestAnimationFrame(() => { routes.scrollScheduled = false; renderRoutes(); });
    }
  }, { passive: true });
  window.addEventListener('resize', () => renderRoutes());
  $('reset').addEventListener('click', reset);
  $('coll-prev').addEventListener('click', () => pageItems(-1));
  $('coll-next').addEventListener('click', () => pageItems(1));
  $('coll-refresh').addEventListener('click', () => loadItems());
  $('coll-close').addEventListener('click', closeCollection);
  $('clear').addEventListener('click', clearJournal);
  $('pause').addEventListener('click', () => {
    journal.paused = !journal.paused;
    countRequests();
    if (!journal.paused) scheduleDraw();
  });
  $('token-open').addEventListener('click', () => { $('token-panel').hidden = !$('token-panel').hidden; });
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    setToken($('token-input').value.trim());
    $('token-input').value = '';
    $('token-msg').textContent = '';
    $('token-panel').hidden = true;
    restart();
  });
  $('filter-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    applyFilter($('filter').value);
  });
  // Clearing the search box (its x, or Escape) shows everything again.
  $('filter').addEventListener('search', () => { if ($('filter').value === '') applyFilter(''); });
  $('token-forget').addEventListener('click', () => {
    setToken('');
    $('token-msg').textContent = 'Forgotten.';
  });
  document.addEventListener('visibilitychange', () => { if (!document.hidden) refreshAll(); });

  try { journal.filter = decodeURIComponent(location.hash.slice(1)); } catch (e) { journal.filter = ''; }
  $('filter').value = journal.filter;
  restart();
  every(POLL_MS, () => (routes.inFlight ? null : fetchRoutes()));
  every(STATE_MS, refreshState);
}

// applyFilter tails the journal again through the new filter. The filter
// is kept in the page's fragment (#matched=false), which reloads and
// bookmarks keep and which never reaches the server's logs.
function applyFilter(f) {
  journal.filter = f.trim();
  const frag = journal.filter ? '#' + encodeURIComponent(journal.filter) : '';
  if (location.hash !== frag) history.replaceState(null, '', frag || location.pathname);
  startJournal();
}

function restart() {
  tokenNeeded = false;
  loadHealth();
  refreshAll();
  startJournal();
  startHooks();
}

init();
