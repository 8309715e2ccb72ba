// Runs against a real scenariomock binary: $SCENARIOMOCK_BIN (.ci/run
// builds it), or scenariomock on PATH.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { start, connect, VerifyError, SESSION_HEADER } from '../index.js';

let mock;
before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'scenariomock-node-'));
  writeFileSync(join(dir, 'pay.yaml'), `
routes:
  - name: get payment
    method: GET
    path: /payments/{id}
    respond: {status: 200, body: {id: pay_1, status: succeeded}}
`);
  mock = await start({ scenarios: [dir] });
});
after(async () => { await mock?.stop(); });

test('start serves the files on a free port', async () => {
  assert.match(mock.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const res = await fetch(`${mock.url}/payments/pay_1`);
  assert.equal(res.status, 200);
  assert.equal((await res.json()).status, 'succeeded');
});

test('add stubs over the files, verify counts, reset removes them', async () => {
  const added = await mock.add(`
routes:
  - name: declined
    method: GET
    path: /payments/{id}
    respond: {status: 402, body: {error: card_declined}}
`);
  assert.deepEqual(added.routes, ['declined']);
  assert.equal((await fetch(`${mock.url}/payments/pay_2`)).status, 402);
  assert.equal(await mock.verify({ route: 'declined', count: 1 }), 1);
  await assert.rejects(mock.verify({ route: 'declined', count: 2 }), (err) => err instanceof VerifyError && err.found === 1 && /want exactly 2/.test(err.message));
  await mock.reset();
  assert.equal((await fetch(`${mock.url}/payments/pay_2`)).status, 200);
  assert.equal(await mock.count({}), 1); // the journal starts again
});

test('add as an object (JSON), and remove', async () => {
  const added = await mock.add({ routes: [{ name: 'json', method: 'POST', path: '/refunds', respond: { status: 201 } }] });
  const res = await fetch(`${mock.url}/refunds`, { method: 'POST', body: '{"amount": 5}', headers: { 'Content-Type': 'application/json' } });
  assert.equal(res.status, 201);
  await mock.verify({ method: 'POST', path: '/refunds', body: { amount: 5 }, count: 1 });
  await mock.remove(added.id);
  assert.equal((await fetch(`${mock.url}/refunds`, { method: 'POST' })).status, 404);
});

test('a document with problems rejects with each at its line:col', async () => {
  await assert.rejects(mock.add('routes:\n  - {path: /x, respnd: {}}\n'), (err) => err.status === 400 && /posted:2:16: routes\[0\]: unknown field "respnd"/.test(err.message));
});

test('a session does not move the lines a problem is reported at', async () => {
  // add() writes the session into the text; the problems must still name
  // the lines the caller wrote, in block and in flow documents.
  const docs = {
    block: ['routes:\n  - {path: /x, respnd: {}}\n', /posted:2:16: routes\[0\]: unknown field "respnd"/],
    'block, no newline at the end': ['routes:\n  - name: x\n    path: /x{\n    respond: {}', /posted:3:13: route "x": path: unbalanced/],
    flow: ['# a flow mapping\n{routes: [\n  {path: /x, respnd: {}}]}\n', /posted:3:14: routes\[0\]: unknown field "respnd"/],
  };
  for (const [name, [doc, want]] of Object.entries(docs)) {
    await assert.rejects(mock.add(doc, { session: 'lines' }), (err) => err.status === 400 && want.test(err.message), name);
  }
});

test('sessions keep parallel tests apart', async () => {
  await mock.add('routes:\n  - {name: who, method: GET, path: /who, respond: {body: one}}\n', { session: 'one' });
  await mock.add('routes:\n  - {name: who, method: GET, path: /who, respond: {body: two}}\n', { session: 'two' });
  assert.equal(await (await fetch(`${mock.url}/__session/one/who`)).text(), 'one');
  assert.equal(await (await fetch(`${mock.url}/who`, { headers: { [SESSION_HEADER]: 'two' } })).text(), 'two');
  assert.equal((await fetch(`${mock.url}/who`)).status, 404);
  await mock.verify({ session: 'one', route: 'who', count: 1 });
  await mock.verify({ session: 'two', count: 1 });
  await mock.reset();
});

test('a session goes into any document text: indented, JSON, after ---', async () => {
  // A template literal indented with the code around it, a JSON string,
  // a document that opens with --- or a comment: the session must land
  // as one more key of the document's own mapping.
  const docs = {
    indented: `
      routes:
        - {name: ind, method: GET, path: /ind, respond: {body: ind}}
    `,
    json: '{"routes": [{"name": "js", "method": "GET", "path": "/js", "respond": {"body": "js"}}]}',
    flow: '# a flow mapping\n{routes: [{name: fl, method: GET, path: /fl, respond: {body: fl}}]}',
    marker: '# a comment\n---\nroutes:\n  - {name: dm, method: GET, path: /dm, respond: {body: dm}}\n',
  };
  for (const [name, doc] of Object.entries(docs)) {
    const added = await mock.add(doc, { session: 'texts' });
    assert.equal(added.session, 'texts', name);
  }
  for (const path of ['ind', 'js', 'fl', 'dm']) {
    assert.equal(await (await fetch(`${mock.url}/__session/texts/${path}`)).text(), path);
    assert.equal((await fetch(`${mock.url}/${path}`)).status, 404, `${path} outside the session`);
  }
  await mock.reset();
});

test('filters take a Date for since', async () => {
  const before = new Date(Date.now() - 60000);
  await fetch(`${mock.url}/payments/pay_1`);
  assert.ok(await mock.count({ since: before }) >= 1);
  assert.equal(await mock.count({ since: new Date(Date.now() + 3600000) }), 0);
  await mock.reset();
});

test('connect talks to a server already running', async () => {
  const other = connect(mock.url + '/');
  await other.add('routes:\n  - {method: GET, path: /ping, respond: {body: pong}}\n');
  assert.equal(await (await fetch(`${mock.url}/ping`)).text(), 'pong');
  await other.reset();
});

test('start fails clearly without the binary', async () => {
  await assert.rejects(start({ binary: '/nonexistent/scenariomock' }), /did not run.*SCENARIOMOCK_BIN/s);
});
