// scenariomock for Node: start the binary on a free port (or connect to a
// running server, such as a container), add scenario documents for one
// test, verify what the server received, reset between tests. No
// dependencies beyond Node 20 (fetch, child_process).
import { spawn } from 'node:child_process';

/** The header that puts a request in a test session. */
export const SESSION_HEADER = 'X-Scenariomock-Session';

/**
 * Start runs `scenariomock serve` on 127.0.0.1 and a free port, and
 * resolves once it is ready.
 * @param {object} [opts]
 * @param {string[]} [opts.scenarios] files and directories to serve (none: the built-in demo)
 * @param {string} [opts.binary] the binary (default $SCENARIOMOCK_BIN, else scenariomock on PATH)
 * @param {string[]} [opts.args] more flags for serve
 * @param {object} [opts.env] environment of the process (default process.env)
 * @param {number} [opts.timeoutMs] how long to wait for it to be ready (default 30000)
 * @returns {Promise<Mock>}
 */
export async function start(opts = {}) {
  const binary = opts.binary ?? process.env.SCENARIOMOCK_BIN ?? 'scenariomock';
  const args = ['serve', '--addr', '127.0.0.1:0', '--log-format', 'json', ...(opts.args ?? []), ...(opts.scenarios ?? [])];
  const child = spawn(binary, args, { env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = [];
  const addr = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`scenariomock did not start within ${opts.timeoutMs ?? 30000} ms`)), opts.timeoutMs ?? 30000);
    const fail = (err) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}\n${output.join('')}`.trim()));
    };
    let pending = '';
    const onData = (chunk) => {
      const text = chunk.toString();
      if (output.length < 200) output.push(text);
      pending += text;
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        try {
          const rec = JSON.parse(line);
          if (rec.msg === 'ready' && rec.addr) {
            clearTimeout(timer);
            resolve(rec.addr);
          }
        } catch { /* not a log line */ }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (err) => fail(new Error(`scenariomock (${binary}) did not run: ${err.message}; set SCENARIOMOCK_BIN or put scenariomock on PATH`)));
    child.on('exit', (code, signal) => fail(new Error(`scenariomock exited (${signal ?? code}) before it was ready`)));
  });
  child.stdout.resume();
  child.stderr.resume();
  return new Mock(`http://${addr}`, { child });
}

/**
 * Connect returns a Mock for a server already running (a container, a
 * server another process started).
 * @param {string} url the server's base URL, http://host:port
 * @param {object} [opts]
 * @param {string} [opts.token] the admin token (--admin-token)
 */
export function connect(url, opts = {}) {
  return new Mock(url.replace(/\/+$/, ''), opts);
}

/** A VerifyError is a verify() whose count was not the one wanted. */
export class VerifyError extends Error {
  constructor(message, found) {
    super(message);
    this.name = 'VerifyError';
    this.found = found;
  }
}

/** Mock is one scenariomock server and its admin API. */
export class Mock {
  constructor(url, { child, token } = {}) {
    /** The base URL of the server, http://127.0.0.1:<port>. */
    this.url = url;
    this.child = child;
    this.token = token;
    this.added = [];
  }

  async admin(method, path, { query, body, type } = {}) {
    const u = new URL(this.url + '/__admin' + path);
    for (const [k, v] of Object.entries(query ?? {})) u.searchParams.set(k, v);
    const headers = {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['Content-Type'] = type ?? 'application/yaml';
    const res = await fetch(u, { method, headers, body });
    const text = await res.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    if (!res.ok) {
      const detail = json ? [json.detail, ...(json.errors ?? [])].filter(Boolean).join('\n  ') : text;
      const err = new Error(`${method} ${u.pathname}: ${res.status} ${detail}`);
      err.status = res.status;
      err.problem = json;
      throw err;
    }
    return json;
  }

  /**
   * Add serves a scenario document (YAML or JSON text, or an object sent
   * as JSON) on top of the server's routes; at equal priority its routes
   * win. With opts.session, the document answers only requests of that
   * session (header X-Scenariomock-Session, or path prefix
   * /__session/NAME/). A document with problems rejects with each at its
   * line:col. Resolves to {id, routes, session}.
   */
  async add(doc, opts = {}) {
    let text = typeof doc === 'string' ? doc : JSON.stringify(doc);
    if (opts.session) {
      text = typeof doc === 'string' ? withSession(doc, opts.session) : JSON.stringify({ ...doc, session: opts.session });
    }
    const out = await this.admin('POST', '/scenarios', { body: text, type: typeof doc === 'string' ? 'application/yaml' : 'application/json' });
    this.added.push(out.id);
    return out;
  }

  /** Remove removes one document add() returned (by its id). */
  async remove(id) {
    await this.admin('DELETE', `/scenarios/${encodeURIComponent(id)}`);
    this.added = this.added.filter((x) => x !== id);
  }

  /**
   * Count resolves to how many requests the server received that match
   * filter: {route, session, method, path, status, idempotency, matched,
   * since, header: {Name: value}, query: {...}, form: {...}, body: {'a.b': value}}.
   */
  async count(filter = {}) {
    const out = await this.admin('GET', '/requests/count', { query: filterQuery(filter) });
    return out.count;
  }

  /** Requests resolves to the requests received that match filter, oldest first. */
  async requests(filter = {}) {
    const out = await this.admin('GET', '/requests', { query: filterQuery(filter) });
    return out.requests;
  }

  /**
   * Verify checks how many requests match filter: exactly count, at least
   * atLeast, at most atMost (none given: at least one), or none. It
   * rejects with a VerifyError saying what it found, and resolves to the
   * count.
   */
  async verify(filter = {}) {
    const { count, atLeast, atMost, none, ...f } = filter;
    const n = await this.count(f);
    let want, ok;
    if (none || count === 0) [want, ok] = ['none', n === 0];
    else if (count !== undefined) [want, ok] = [`exactly ${count}`, n === count];
    else {
      const lo = atLeast ?? (atMost === undefined ? 1 : 0);
      want = atMost === undefined ? `at least ${lo}` : `${lo} to ${atMost}`;
      ok = n >= lo && (atMost === undefined || n <= atMost);
    }
    if (!ok) {
      throw new VerifyError(`verify: ${n} request(s) match ${JSON.stringify(f)}, want ${want}`, n);
    }
    return n;
  }

  /**
   * Reset removes every runtime document and forgets what the server
   * remembers (sequence positions, idempotency keys, collections, the
   * journal), so that the next test starts from the files alone.
   */
  async reset() {
    await this.admin('DELETE', '/scenarios', { query: { runtime: 'true' } });
    this.added = [];
    await this.admin('POST', '/reset');
  }

  /** Stop ends the server start() ran (and waits for it); a no-op for connect(). */
  async stop() {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
    await exited;
    clearTimeout(timer);
  }
}

// withSession adds the key session: NAME to the mapping a document's
// text holds, wherever that mapping starts (after leading blank and
// comment lines, directives and a --- marker): a block mapping gets it on
// a line of its own after its last (before a ... marker), at the
// indentation of its first key (a template literal indented with the code
// around it); a flow mapping (JSON text is one) just inside its {. Every
// line the caller wrote keeps its number, which the server's problems
// name.
function withSession(text, session) {
  const key = `"session": ${JSON.stringify(session)}`;
  const lines = text.split('\n');
  const skip = (from) => {
    let i = from;
    while (i < lines.length && /^\s*(#.*)?$/.test(lines[i])) i++;
    return i;
  };
  let i = skip(0);
  while (i < lines.length && /^%/.test(lines[i])) i = skip(i + 1);
  if (i < lines.length && /^---(\s*(#.*)?)$/.test(lines[i])) i = skip(i + 1);
  if (i < lines.length && /^\s*\{/.test(lines[i])) {
    const at = lines[i].indexOf('{') + 1;
    lines[i] = `${lines[i].slice(0, at)}${key}, ${lines[i].slice(at)}`;
  } else {
    // A block mapping: the key goes after the document's last line, at
    // the indentation of its first key, so that every line the caller
    // wrote keeps its number in the problems the server reports.
    const indent = i < lines.length ? lines[i].match(/^[ \t]*/)[0] : '';
    let end = lines.length;
    while (end > i && /^\s*(#.*)?$/.test(lines[end - 1])) end--;
    if (end > i && /^\.\.\.(\s*(#.*)?)$/.test(lines[end - 1])) end--; // before a document end marker
    else end = lines.length;
    lines.splice(end, 0, `${indent}${key}`);
  }
  return lines.join('\n');
}

function filterQuery(f) {
  const q = {};
  for (const [k, v] of Object.entries(f)) {
    if (v === undefined || v === null) continue;
    if (['header', 'query', 'form', 'body'].includes(k)) {
      for (const [name, value] of Object.entries(v)) q[`${k}.${name}`] = String(value);
    } else if (v instanceof Date) {
      q[k] = v.toISOString(); // since: String(date) is no RFC 3339 time
    } else {
      q[k] = String(v);
    }
  }
  return q;
}
