// server_load.mjs — a bounded load generator for an OpenAI-compatible server (edgellm serve,
// llama-server): N concurrent clients, each sending streamed /v1/completions requests one
// after the other for S seconds; or R sequential requests. Node.js only (no packages).
//
// usage: node bench/server_load.mjs --port P [--host 127.0.0.1] [--clients N] [--seconds S]
//            [--sequential R] [--max-tokens T] [--prompt-words W] [--pid PID] [--label NAME]
//            [--key KEY] [--path /v1/completions|/v1/chat/completions]
// Output: one JSON line: requests, errors, generated tokens, aggregate tok/s (generated tokens
// of the requests that finished / wall time), time to first token and inter-token latency
// (p50/p95, ms; ITL = gaps between streamed chunks that carry text), RSS of --pid at the
// start and the end (MiB), and for --sequential the per-request latency and RSS slopes
// (least squares over the request index).
import http from 'node:http';
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf('--' + name); return i >= 0 ? args[i + 1] : def; };
const host = opt('host', '127.0.0.1');
const port = Number(opt('port', 8080));
const clients = Number(opt('clients', 1));
const seconds = Number(opt('seconds', 60));
const sequential = Number(opt('sequential', 0));
const maxTokens = Number(opt('max-tokens', 128));
const promptWords = Number(opt('prompt-words', 48));
const pid = opt('pid', null);
const label = opt('label', 'server');
const key = opt('key', null);
const path = opt('path', '/v1/completions');
const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(clients, 1) });

function rssMiB() {
  if (!pid) return null;
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
    return m ? Number(m[1]) / 1024 : null;
  } catch { return null; }
}

const WORDS = 'once upon a time there was a little robot who lived in a quiet town by the sea and every morning it ' +
  'walked to the harbour to count the boats that came in from the night with their nets full of fish';
function makePrompt(c, i) {
  const w = WORDS.split(' ');
  const out = [`Story ${c}-${i}:`];
  for (let k = 0; out.length < promptWords; k++) out.push(w[(k * 7 + c * 3 + i) % w.length]);
  return out.join(' ');
}

// One streamed request: resolves {ok, ttft, gaps[], tokens, ms, status}.
function request(c, i) {
  return new Promise((resolve) => {
    const prompt = makePrompt(c, i);
    const body = JSON.stringify(path.includes('chat')
      ? { messages: [{ role: 'user', content: prompt }], max_tokens: maxTokens, stream: true, seed: i, temperature: 0.8,
          stream_options: { include_usage: true } }
      : { prompt, max_tokens: maxTokens, stream: true, seed: i, temperature: 0.8, stream_options: { include_usage: true } });
    const t0 = performance.now();
    let first = 0, last = 0, chunks = 0, tokens = null, buf = '', done = false;
    const gaps = [];
    const headers = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
    if (key) headers.Authorization = `Bearer ${key}`;
    const req = http.request({ host, port, path, method: 'POST', headers, agent }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        res.on('end', () => resolve({ ok: false, status: res.statusCode }));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (d) => {
        buf += d;
        let k;
        while ((k = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, k);
          buf = buf.slice(k + 2);
          if (!ev.startsWith('data: ')) continue;
          const data = ev.slice(6);
          if (data === '[DONE]') { done = true; continue; }
          let o;
          try { o = JSON.parse(data); } catch { continue; }
          if (o.usage && o.usage.completion_tokens != null) tokens = o.usage.completion_tokens;
          const ch = o.choices && o.choices[0];
          const text = ch ? (ch.text ?? ch.delta?.content ?? '') : '';
          if (text) {
            const now = performance.now();
            if (!first) first = now; else gaps.push(now - last);
            last = now;
            chunks++;
          }
        }
      });
      res.on('end', () => {
        const ms = performance.now() - t0;
        resolve({ ok: done, status: 200, ttft: first ? first - t0 : null, gaps, tokens: tokens ?? chunks, ms });
      });
      res.on('error', () => resolve({ ok: false, status: -1 }));
    });
    req.on('error', () => resolve({ ok: false, status: -1 }));
    req.end(body);
  });
}

function pct(a, p) {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
function slope(ys) {   // least squares of ys over 0..n-1
  const n = ys.length;
  if (n < 2) return 0;
  const mx = (n - 1) / 2, my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0, sxx = 0;
  for (let i = 0; i < n; i++) { sxy += (i - mx) * (ys[i] - my); sxx += (i - mx) ** 2; }
  return sxy / sxx;
}

const rss0 = rssMiB();
const results = [];
const t0 = performance.now();
if (sequential > 0) {
  const lat = [], rss = [];
  for (let i = 0; i < sequential; i++) {
    const r = await request(0, i);
    results.push(r);
    lat.push(r.ms ?? 0);
    if (i % 10 === 0) rss.push(rssMiB() ?? 0);
  }
  var seqStats = { latency_ms_first100: lat.slice(0, 100).reduce((a, b) => a + b, 0) / Math.min(100, lat.length),
                   latency_ms_last100: lat.slice(-100).reduce((a, b) => a + b, 0) / Math.min(100, lat.length),
                   latency_slope_ms_per_100_requests: slope(lat) * 100,
                   rss_slope_mib_per_100_requests: slope(rss) * 10 };
} else {
  const end = t0 + seconds * 1000;
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let i = 0; performance.now() < end; i++) results.push(await request(c, i));
  }));
}
const wall = (performance.now() - t0) / 1000;
const ok = results.filter((r) => r.ok);
const gen = ok.reduce((a, r) => a + r.tokens, 0);
const ttft = ok.map((r) => r.ttft).filter((x) => x != null);
const gaps = ok.flatMap((r) => r.gaps);
const out = {
  label, clients: sequential ? 1 : clients, seconds: Number(wall.toFixed(1)), requests: results.length,
  errors: results.length - ok.length, statuses: [...new Set(results.filter((r) => !r.ok).map((r) => r.status))],
  generated_tokens: gen, tok_per_s: Number((gen / wall).toFixed(2)),
  ttft_p50_ms: pct(ttft, 50)?.toFixed(0), ttft_p95_ms: pct(ttft, 95)?.toFixed(0),
  itl_p50_ms: pct(gaps, 50)?.toFixed(1), itl_p95_ms: pct(gaps, 95)?.toFixed(1),
  rss_start_mib: rss0?.toFixed(0), rss_end_mib: rssMiB()?.toFixed(0),
  ...(sequential ? seqStats : {}),
};
console.log(JSON.stringify(out));
agent.destroy();
