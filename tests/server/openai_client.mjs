// openai_client.mjs — `edgellm serve` driven by the official `openai` npm client (the
// version pinned in package.json; install it with `npm ci` in this folder).
//
// usage: node openai_client.mjs EDGELLM_CLI MODEL.gguf [MODEL2.gguf ...]
// The first model file that exists is used (stories260K: no chat template, so the server
// gets --chat-template chatml). The server starts on a free port of 127.0.0.1 and is always
// stopped (SIGTERM; it must exit 0). Exit status: 0 all passed, 1 a failure, 77 skipped
// (no model, or no openai package unless EDGELLM_REQUIRE_OPENAI is set).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const [cli, ...models] = process.argv.slice(2);
const model = models.find((m) => existsSync(m));
if (!cli || !model) {
  console.error(`SKIP: no model among ${models.join(', ')}`);
  process.exit(77);
}
let OpenAI;
try {
  const require = createRequire(import.meta.url);
  require.resolve('openai');
  OpenAI = (await import('openai')).default;
} catch {
  console.error("SKIP: the openai package is not installed (run 'npm ci' in tests/server)");
  process.exit(process.env.EDGELLM_REQUIRE_OPENAI ? 1 : 77);   // CI sets it: a skip there is a failure
}

const KEY = 'test-key-' + Math.random().toString(36).slice(2);
let server = null;
let serverLog = '';
process.on('exit', () => { if (server && server.exitCode === null) server.kill('SIGKILL'); });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(1));

function startServer() {
  return new Promise((resolve, reject) => {
    server = spawn(cli, ['serve', '-m', model, '--port', '0', '--host', '127.0.0.1', '--chat-template', 'chatml',
      '-c', '1024', '-np', '2', '-t', '1', '--api-key', KEY], { stdio: ['ignore', 'ignore', 'pipe'] });
    const timer = setTimeout(() => reject(new Error('no "listening on" line within 60 s:\n' + serverLog)), 60000);
    server.stderr.on('data', (d) => {
      serverLog += d.toString();
      const m = serverLog.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m && /ready in/.test(serverLog)) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    server.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${serverLog}`)); });
  });
}

function stopServer() {
  return new Promise((resolve) => {
    if (!server || server.exitCode !== null) return resolve(server ? server.exitCode : -1);
    const timer = setTimeout(() => server.kill('SIGKILL'), 30000);
    server.removeAllListeners('exit');
    server.on('exit', (code, sig) => { clearTimeout(timer); resolve(sig ? -1 : code); });
    server.kill('SIGTERM');
  });
}

function greedyRun(prompt, n) {
  const r = spawnSync(cli, ['run', '-m', model, '-p', prompt, '-n', String(n), '--temp', '0', '-t', '1'],
    { encoding: 'utf8' });
  if (r.status !== 0 || !r.stdout.startsWith(prompt)) throw new Error('edgellm run failed: ' + r.stderr);
  return r.stdout.slice(prompt.length).replace(/\n$/, '');
}

let failed = 0, passed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e && e.stack ? e.stack : e}`);
  }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }
function eq(a, b, msg) { if (a !== b) throw new Error(`${msg}: ${JSON.stringify(a)} !== ${JSON.stringify(b)}`); }

const port = await startServer();
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: KEY, maxRetries: 0, timeout: 60000 });
const prompt = 'Once upon a time';

try {
  let id = null;
  await check('models.list', async () => {
    const list = await client.models.list();
    eq(list.data.length, 1, 'one model');
    id = list.data[0].id;
    eq(id, 'stories260K', 'model id');
  });

  const want = greedyRun(prompt, 32);
  await check('completions: greedy equals edgellm run', async () => {
    const r = await client.completions.create({ model: id, prompt, max_tokens: 32, temperature: 0 });
    eq(r.object, 'text_completion', 'object');
    eq(r.choices[0].text, want, 'text');
    eq(r.choices[0].finish_reason, 'length', 'finish_reason');
    eq(r.usage.completion_tokens, 32, 'completion_tokens');
    eq(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens, 'total_tokens');
  });

  await check('completions: streamed, joined, equals not streamed', async () => {
    const s = await client.completions.create({ model: id, prompt, max_tokens: 32, temperature: 0, stream: true });
    let text = '', finish = null, chunks = 0;
    for await (const c of s) { chunks++; text += c.choices[0]?.text ?? ''; finish = c.choices[0]?.finish_reason ?? finish; }
    eq(text, want, 'text');
    eq(finish, 'length', 'finish_reason');
    assert(chunks >= 2, 'several chunks');
  });

  await check('completions: stop strings and max_tokens', async () => {
    const stop = want.slice(10, 15);
    const r = await client.completions.create({ model: id, prompt, max_tokens: 32, temperature: 0, stop: ['@@@', stop] });
    eq(r.choices[0].text, want.slice(0, want.indexOf(stop)), 'cut before the stop string');
    eq(r.choices[0].finish_reason, 'stop', 'finish_reason');
    const s = await client.completions.create({ model: id, prompt, max_tokens: 32, temperature: 0, stop, stream: true });
    let text = '';
    for await (const c of s) text += c.choices[0]?.text ?? '';
    eq(text, want.slice(0, want.indexOf(stop)), 'streamed cut');
    const r5 = await client.completions.create({ model: id, prompt, max_tokens: 5, temperature: 0 });
    eq(r5.usage.completion_tokens, 5, 'max_tokens 5');
  });

  let chatText = null;
  const messages = [{ role: 'system', content: 'You tell short stories.' }, { role: 'user', content: 'A story about a dog.' }];
  await check('chat: not streamed, usage', async () => {
    const r = await client.chat.completions.create({ model: id, messages, max_tokens: 24, temperature: 0 });
    eq(r.object, 'chat.completion', 'object');
    eq(r.choices[0].message.role, 'assistant', 'role');
    chatText = r.choices[0].message.content;
    assert(typeof chatText === 'string', 'content is a string');
    assert(['stop', 'length'].includes(r.choices[0].finish_reason), 'finish_reason');
    assert(r.usage.prompt_tokens > 10 && r.usage.completion_tokens <= 24, 'usage counts');
    eq(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens, 'total_tokens');
    eq(r.messages_dropped, 0, 'messages_dropped');
  });

  await check('chat: streamed with include_usage equals not streamed', async () => {
    const s = await client.chat.completions.create({ model: id, messages, max_tokens: 24, temperature: 0, stream: true,
      stream_options: { include_usage: true } });
    let text = '', usage = null, finish = null, role = null;
    for await (const c of s) {
      if (c.usage) usage = c.usage;
      const ch = c.choices[0];
      if (!ch) continue;
      role = role ?? ch.delta.role;
      text += ch.delta.content ?? '';
      finish = ch.finish_reason ?? finish;
    }
    eq(text, chatText, 'text');
    eq(role, 'assistant', 'role');
    assert(finish === 'stop' || finish === 'length', 'finish_reason');
    assert(usage && usage.completion_tokens <= 24 && usage.prompt_tokens > 10, 'usage chunk');
  });

  await check('chat: the next turn reuses the cached history', async () => {
    const next = [...messages, { role: 'assistant', content: chatText }, { role: 'user', content: 'And then?' }];
    const r = await client.chat.completions.create({ model: id, messages: next, max_tokens: 8, temperature: 0 });
    const cached = r.usage.prompt_tokens_details?.cached_tokens ?? 0;
    assert(cached > 20, `cached_tokens ${cached}`);
  });

  await check('chat: a conversation longer than the slot loses old turns', async () => {
    const long = [{ role: 'system', content: 'Sys.' }];
    for (let i = 0; i < 60; i++) long.push({ role: i % 2 ? 'assistant' : 'user', content: 'turn number ' + i + ' with some words in it' });
    const r = await client.chat.completions.create({ model: id, messages: long, max_tokens: 8 });
    assert(r.messages_dropped > 0, 'messages_dropped > 0');
    assert(r.usage.prompt_tokens <= 1024, 'fits the slot');
  });

  await check('errors: key, model, messages, types', async () => {
    const bad = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await bad.models.list().then(() => { throw new Error('accepted a wrong key'); },
      (e) => { assert(e instanceof OpenAI.AuthenticationError && e.status === 401, `401, got ${e}`); });
    const expect400 = async (p, what) => p.then(() => { throw new Error(what + ' accepted'); },
      (e) => { assert(e instanceof OpenAI.BadRequestError && e.status === 400 && e.message, `${what}: ${e}`); });
    await expect400(client.chat.completions.create({ model: 'no-such-model', messages }), 'unknown model');
    await expect400(client.chat.completions.create({ model: id, messages: [] }), 'empty messages');
    await expect400(client.completions.create({ model: id, prompt, temperature: 'hot' }), 'temperature string');
    await expect400(client.completions.create({ model: id, prompt, max_tokens: -7 }), 'max_tokens -7');
  });

  await check('abort: a stream the client aborts is cancelled', async () => {
    const ac = new AbortController();
    const s = await client.completions.create({ model: id, prompt, max_tokens: 1000, temperature: 0, stream: true },
      { signal: ac.signal });
    let n = 0;
    try {
      for await (const c of s) { if (++n === 2) ac.abort(); }
    } catch (e) {
      assert(e.name === 'AbortError' || e instanceof OpenAI.APIUserAbortError, `aborted: ${e}`);
    }
    let cancelled = 0;
    for (let i = 0; i < 50 && cancelled < 1; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const m = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${KEY}` } });
      cancelled = Number((await m.text()).match(/\nedgellm_requests_cancelled_total (\d+)/)?.[1] ?? 0);
    }
    assert(cancelled >= 1, 'edgellm_requests_cancelled_total >= 1');
  });
} finally {
  const code = await stopServer();
  if (code !== 0) { failed++; console.log(`not ok - server exit status ${code}\n${serverLog}`); }
  else console.log('ok - server stopped on SIGTERM with status 0');
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
