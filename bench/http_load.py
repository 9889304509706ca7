#!/usr/bin/env python3
"""The OpenAI-compatible HTTP API under load, from real clients.

N concurrent clients (threads, each its own `openai.OpenAI`) send R chat
completions each: short varied prompts, max_tokens 32, temperature 0,
alternating streamed and not. Prints requests/s, completion tokens/s, failed
requests, and time to first token at P50/P95/P99: for a streamed request
the first chunk with content, for a non-streamed one the whole response
(reported apart). One JSON line with --json, and a table; every figure
names the CPU (lscpu's Model name).

By default it starts `ellm serve` itself (--threads 2 --max-queue 64, an API
key file, a free port); --url targets a running server instead.

--with-kafka-job runs against `ellmd` (Kafka + http:) instead: it starts
its own broker (scripts/kafka on port 19292, run dir /tmp/kafka-load),
first runs a ~16K-token summarize job alone with `ellm summarize --ctx
32768` (its time is reported), then submits the same job over Kafka
(`ellm submit --inline`, model.context 32768), runs the load while the job
runs, and checks: 0 failed requests, the job succeeded once (attempts 1),
its result equals the job run alone. Broker and daemon are stopped at the
end.

--llama-server PATH runs the same load against llama.cpp's llama-server
(`-m MODEL -t 2 -c 8192`, its default -np unless --llama-parallel; built by
scripts/reference/build-llama-bench --server) and prints ellm/llama-server
ratios for throughput and P99 TTFT.

Servers, broker and jobs inherit this script's niceness (run it under
`nice -n 10` on a shared machine).

Usage (the python of scripts/api-clients has the pinned `openai`):
    py=$(scripts/api-clients)
    $py bench/http_load.py [--clients 32] [--requests 5] [--json]
    $py bench/http_load.py --with-kafka-job
    $py bench/http_load.py --llama-server "$(scripts/reference/build-llama-bench --server \\
        --print-dir)/llama-server"
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import openai

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "sk-load-0123456789"
# --kafka-port / --kafka-run; never 19092/19192/19392: the tests' and CI's brokers use those.
KAFKA_PORT = 19292
KAFKA_RUN = "/tmp/kafka-load"

SUBJECTS = ["the sea", "a red bicycle", "winter mornings", "prime numbers", "a lighthouse",
            "coffee", "the moon", "an old library", "rain on a roof", "mountains",
            "a city at night", "bees", "chess", "a train journey", "autumn leaves", "the desert"]
ASKS = ["Write one sentence about {}.", "Give three words that describe {}.",
        "Say something kind about {}.", "Explain {} to a child in two sentences.",
        "Write a short haiku about {}.", "What is interesting about {}?"]


def prompt(i):
    return ASKS[i % len(ASKS)].format(SUBJECTS[(i * 7) % len(SUBJECTS)])


def cpu_name():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, key=None):
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + key} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def wait_ready(base, proc=None, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"server exited ({proc.returncode}) before it was ready")
        if http_get(base + "/health")[0] == 200:
            return
        time.sleep(0.1)
    raise SystemExit(f"{base} not ready after {timeout} s")


def write_keys(tmp):
    path = os.path.join(tmp, "keys")
    with open(path, "w") as f:
        f.write(KEY + "\n")
    os.chmod(path, 0o600)
    return path


def start_ellm_serve(ellm, model, tmp, threads, max_queue, sessions=None):
    cmd = [ellm, "serve", "--model", model, "--listen", "127.0.0.1:0", "--api-keys-file",
           write_keys(tmp), "--db", os.path.join(tmp, "serve.db"), "--threads", str(threads),
           "--max-queue", str(max_queue)]
    if sessions:
        cmd += ["--sessions", str(sessions)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on (https?://\S+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"ellm serve printed no address: {line!r}")
    wait_ready(m.group(1), proc)
    return proc, m.group(1), " ".join(cmd)


def start_llama_server(path, model, threads, ctx, parallel):
    port = free_port()
    cmd = [path, "-m", model, "-t", str(threads), "-c", str(ctx), "--port", str(port),
           "--host", "127.0.0.1"]
    if parallel:
        cmd += ["-np", str(parallel)]
    log = open(os.path.join(tempfile.gettempdir(), f"llama-server-{port}.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, proc)
    return proc, base, " ".join(cmd), log.name


def stop(proc, what):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        print(f"{what} did not stop on SIGTERM; killing it", file=sys.stderr)
        proc.kill()
        proc.wait()


def one_request(client, model, i, stream, max_tokens):
    """One chat completion; returns a dict with its timings and token count."""
    msgs = [{"role": "user", "content": prompt(i)}]
    t0 = time.perf_counter()
    if not stream:
        r = client.chat.completions.create(model=model, messages=msgs, max_tokens=max_tokens,
                                           temperature=0)
        took = time.perf_counter() - t0
        if not r.choices or r.choices[0].message.content is None:
            raise RuntimeError("no choices/content")
        return {"stream": False, "ttft": took, "total": took,
                "tokens": r.usage.completion_tokens if r.usage else 0}
    s = client.chat.completions.create(model=model, messages=msgs, max_tokens=max_tokens,
                                       temperature=0, stream=True,
                                       stream_options={"include_usage": True})
    ttft, chunks, usage = None, 0, None
    for chunk in s:
        if chunk.choices:
            if chunk.choices[0].delta.content:
                chunks += 1
                if ttft is None:
                    ttft = time.perf_counter() - t0
        if chunk.usage:
            usage = chunk.usage
    total = time.perf_counter() - t0
    if ttft is None:
        raise RuntimeError("stream without content")
    return {"stream": True, "ttft": ttft, "total": total,
            "tokens": usage.completion_tokens if usage else chunks}


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def run_load(base, key, clients, requests, max_tokens):
    """Runs the load; returns the summary dict."""
    probe = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0)
    model = probe.models.list().data[0].id
    # Warm-up: the first request pays for page faults and lazy set-up.
    one_request(probe, model, 0, False, 4)
    results, errors = [], []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def worker(c):
        client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=600)
        start.wait()
        for r in range(requests):
            i = c * requests + r
            try:
                res = one_request(client, model, i, stream=(i % 2 == 0), max_tokens=max_tokens)
                with lock:
                    results.append(res)
            except Exception as e:  # any failure counts; the first few are shown
                with lock:
                    errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    tokens = sum(r["tokens"] for r in results)
    st = [r["ttft"] for r in results if r["stream"]]
    ns = [r["total"] for r in results if not r["stream"]]
    ms = lambda v: None if v is None else round(v * 1000, 1)  # noqa: E731
    return {
        "model": model, "clients": clients, "requests_per_client": requests,
        "max_tokens": max_tokens, "requests": clients * requests, "ok": len(results),
        "failed": len(errors), "errors": errors[:5], "wall_s": round(wall, 2),
        "requests_per_s": round(len(results) / wall, 3),
        "completion_tokens": tokens, "completion_tokens_per_s": round(tokens / wall, 2),
        "stream_ttft_ms": {f"p{p}": ms(percentile(st, p)) for p in (50, 95, 99)},
        "nonstream_total_ms": {f"p{p}": ms(percentile(ns, p)) for p in (50, 95, 99)},
    }


def table(label, s):
    print(f"\n{label}: {s['clients']} clients x {s['requests_per_client']} requests, "
          f"max_tokens {s['max_tokens']}, temperature 0, streamed/not alternating")
    print(f"  requests ok / failed      {s['ok']} / {s['failed']}  (wall {s['wall_s']} s)")
    print(f"  requests/s                {s['requests_per_s']}")
    print(f"  completion tokens/s       {s['completion_tokens_per_s']}  "
          f"({s['completion_tokens']} tokens)")
    for name, key in (("streamed: first content chunk", "stream_ttft_ms"),
                      ("not streamed: whole response", "nonstream_total_ms")):
        d = s[key]
        print(f"  {name:30s} P50 {d['p50']} ms  P95 {d['p95']} ms  P99 {d['p99']} ms")
    for e in s["errors"]:
        print(f"  error: {e}")


# --- --with-kafka-job -------------------------------------------------------

def kafka(cmd):
    env = dict(os.environ, ELLM_KAFKA_PORT=str(KAFKA_PORT), ELLM_KAFKA_RUN=KAFKA_RUN)
    subprocess.run([os.path.join(ROOT, "scripts", "kafka"), cmd],
                   env=env, check=(cmd == "start"), stdout=sys.stderr)


def write_long_report(path, pages):
    """The sample report of configs/samples/make_samples.py padded to `pages`
    pages, as text (~107 Gemma tokens a page). make_samples.py imports
    reportlab at the top only to draw PDFs; its text needs none of it, so the
    module is loaded with empty stand-ins for reportlab."""
    import importlib.util
    import types
    for name in ("reportlab", "reportlab.lib", "reportlab.lib.pagesizes", "reportlab.pdfbase",
                 "reportlab.pdfbase.pdfmetrics", "reportlab.pdfgen", "reportlab.pdfgen.canvas"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["reportlab.lib.pagesizes"].A4 = (595.0, 842.0)
    sys.modules["reportlab.pdfgen"].canvas = sys.modules["reportlab.pdfgen.canvas"]
    sys.modules["reportlab.pdfbase"].pdfmetrics = sys.modules["reportlab.pdfbase.pdfmetrics"]
    spec = importlib.util.spec_from_file_location(
        "make_samples", os.path.join(ROOT, "configs", "samples", "make_samples.py"))
    samples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(samples)
    with open(path, "w") as f:
        f.write("\n\n".join(h + "\n\n" + "\n\n".join(ps) for h, ps in samples.long_report(pages)))
        f.write("\n")


def summarize_alone(ellm, model, doc, tmp, threads, ctx):
    t0 = time.perf_counter()
    r = subprocess.run([ellm, "summarize", doc, "--model", model,
                        "--db", os.path.join(tmp, "alone.db"), "--ctx", str(ctx),
                        "--threads", str(threads), "--json"],
                       capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"ellm summarize failed: {r.stderr[-2000:]}")
    out = json.loads(r.stdout)
    return out["text"], took, out


def start_ellmd(ellmd, model, tmp, threads, max_queue, ctx):
    topic = f"load-{os.getpid()}-{int(time.time())}"
    config = {
        "model": {"path": model, "threads": threads, "context": ctx},
        "store": {"path": os.path.join(tmp, "ellmd.db")}, "kv": {"prefix_cache_dir": ""},
        "kafka": {"enabled": True, "brokers": f"127.0.0.1:{KAFKA_PORT}", "group_id": topic,
                  "jobs_topic": topic, "results_topic": topic + ".results",
                  "dead_letter_topic": topic + ".dlq", "group_instance_id": topic,
                  "session_timeout_ms": 6000},
        "http": {"enabled": True, "listen": "127.0.0.1:0", "api_keys_file": write_keys(tmp),
                 "max_queue": max_queue},
        "jobs": {"allowed_roots": [tmp]}, "log": {"level": "info"}}
    path = os.path.join(tmp, "ellmd.yaml")
    with open(path, "w") as f:
        json.dump(config, f)  # JSON is YAML
    log = open(os.path.join(tmp, "ellmd.log"), "w")
    proc = subprocess.Popen([ellmd, "--config", path],
                            stdout=subprocess.PIPE, stderr=log, text=True)
    for line in proc.stdout:
        log.write(line)
        m = re.search(r"http API on (https?://\S+)", line)
        if m:
            threading.Thread(target=lambda: [log.write(x) for x in proc.stdout],
                             daemon=True).start()
            wait_ready(m.group(1), proc)
            return proc, m.group(1), path, config["store"]["path"]
    raise SystemExit(f"ellmd exited ({proc.wait()}) without serving HTTP; see {log.name}")


def job_status(ellm, job_id, db):
    r = subprocess.run([ellm, "jobs", "show", job_id, "--json", "--db", db],
                       capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def with_kafka_job(args, cpu):
    tmp = tempfile.mkdtemp(prefix="ellm-load-")
    doc = args.doc
    if not doc:
        doc = os.path.join(tmp, f"northwind-report-{args.doc_pages}-pages.txt")
        write_long_report(doc, args.doc_pages)
    print(f"job alone: ellm summarize {doc} --ctx {args.job_ctx} --threads {args.threads}",
          file=sys.stderr)
    alone_text, alone_s, alone = summarize_alone(args.ellm, args.model, doc, tmp, args.threads,
                                                 args.job_ctx)
    print(f"job alone: {alone_s:.1f} s", file=sys.stderr)
    kafka("start")
    proc = None
    try:
        proc, base, config, db = start_ellmd(args.ellmd, args.model, tmp, args.threads,
                                             args.max_queue, args.job_ctx)
        job_id = f"load-job-{os.getpid()}"
        sub = subprocess.run([args.ellm, "submit", doc, "--inline", "--id", job_id, "--config",
                              config], capture_output=True, text=True, timeout=120)
        if sub.returncode != 0:
            raise SystemExit(f"ellm submit failed: {sub.stderr}")
        t_submit = time.perf_counter()
        deadline = time.time() + 300
        while time.time() < deadline and (job_status(args.ellm, job_id, db) or {}).get(
                "status") != "running":
            time.sleep(0.1)
        summary = run_load(base, KEY, args.clients, args.requests, args.max_tokens)
        summary["job_status_after_load"] = (job_status(args.ellm, job_id, db) or {}).get("status")
        job = job_status(args.ellm, job_id, db)
        while job and job.get("status") not in ("succeeded", "failed"):
            time.sleep(0.5)
            job = job_status(args.ellm, job_id, db)
        job_s = time.perf_counter() - t_submit
        text = ((job or {}).get("result") or {}).get("text")
        summary.update({
            "mode": "ellmd (Kafka + http)", "cpu": cpu, "threads": args.threads,
            "job": {"id": job_id,
                    "doc": doc if args.doc else f"sample report, {args.doc_pages} pages (text)",
                    "status": (job or {}).get("status"), "attempts": (job or {}).get("attempts"),
                    "equals_alone": text is not None and text == alone_text,
                    "alone_s": round(alone_s, 1), "under_load_s": round(job_s, 1),
                    "alone_stats": {k: v for k, v in alone.items() if k != "text"}}})
        return summary
    finally:
        stop(proc, "ellmd")
        kafka("stop")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="a running server's base URL (without /v1)")
    ap.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "none"),
                    help="key for --url (default $OPENAI_API_KEY)")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=5, help="requests per client")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--ellm", default=os.path.join(ROOT, "build/release/cli/ellm"))
    ap.add_argument("--ellmd", default=os.path.join(ROOT, "build/release/daemon/ellmd"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-queue", type=int, default=64)
    ap.add_argument("--sessions", type=int, help="ellm serve --sessions (default: its own, 8)")
    ap.add_argument("--with-kafka-job", action="store_true",
                    help="ellmd with Kafka + http, the load beside a ~16K-token summarize job")
    ap.add_argument("--doc", help="the job's document (default: the sample report padded to "
                    "--doc-pages pages, as text; configs/samples/*-long.pdf is only ~1.2K tokens)")
    ap.add_argument("--doc-pages", type=int, default=150, help="~107 tokens a page; 150: ~16K")
    ap.add_argument("--job-ctx", type=int, default=32768)
    ap.add_argument("--kafka-port", type=int, default=KAFKA_PORT,
                    help="--with-kafka-job: its own broker's port")
    ap.add_argument("--kafka-run", default=KAFKA_RUN,
                    help="--with-kafka-job: its own broker's run directory")
    ap.add_argument("--llama-server", help="also run the load against this llama-server")
    ap.add_argument("--llama-ctx", type=int, default=8192)
    ap.add_argument("--llama-parallel", type=int, default=0,
                    help="llama-server -np (default: not passed, its own default)")
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args()
    globals().update(KAFKA_PORT=args.kafka_port, KAFKA_RUN=args.kafka_run)
    cpu = cpu_name()
    print(f"CPU: {cpu}; {os.cpu_count()} logical CPUs", file=sys.stderr)

    if args.with_kafka_job:
        ellm = with_kafka_job(args, cpu)
        ellm_label = "ellmd (Kafka + http), a summarize job running"
    else:
        proc, cmd = None, None
        try:
            if args.url:
                base, key = args.url.rstrip("/"), args.api_key
            else:
                tmp = tempfile.mkdtemp(prefix="ellm-load-")
                proc, base, cmd = start_ellm_serve(args.ellm, args.model, tmp, args.threads,
                                                   args.max_queue, args.sessions)
                key = KEY
            ellm = run_load(base, key, args.clients, args.requests, args.max_tokens)
        finally:
            stop(proc, "ellm serve")
        ellm.update({"mode": "url" if args.url else "ellm serve", "server": cmd or args.url,
                     "cpu": cpu, "threads": args.threads})
        ellm_label = "ellm serve" if not args.url else args.url
    print(json.dumps(ellm), file=sys.stderr)  # kept if a later run is interrupted

    out = {"cpu": cpu, "ellm": ellm}
    if args.llama_server:
        proc = None
        try:
            proc, base, cmd, log = start_llama_server(args.llama_server, args.model, args.threads,
                                                      args.llama_ctx, args.llama_parallel)
            llama = run_load(base, "none", args.clients, args.requests, args.max_tokens)
        finally:
            stop(proc, "llama-server")
        with open(log) as f:
            slots = re.findall(r"n_slots = (\d+)|initializing slots, n_slots = (\d+)", f.read())
        llama.update({"server": cmd, "cpu": cpu, "log": log,
                      "n_slots": next((a or b for a, b in slots), None)})
        out["llama_server"] = llama
        ratio = lambda a, b: None if not a or not b else round(a / b, 2)  # noqa: E731
        out["ratio_ellm_over_llama_server"] = {
            "requests_per_s": ratio(ellm["requests_per_s"], llama["requests_per_s"]),
            "completion_tokens_per_s": ratio(ellm["completion_tokens_per_s"],
                                             llama["completion_tokens_per_s"]),
            "stream_ttft_p99": ratio(ellm["stream_ttft_ms"]["p99"],
                                     llama["stream_ttft_ms"]["p99"]),
            "nonstream_total_p99": ratio(ellm["nonstream_total_ms"]["p99"],
                                         llama["nonstream_total_ms"]["p99"])}

    print(f"CPU: {cpu}")
    table(ellm_label, ellm)
    if "job" in ellm:
        j = ellm["job"]
        print(f"  job {j['id']}: {j['status']}, attempts {j['attempts']}, result equals the job "
              f"alone: {j['equals_alone']}; alone {j['alone_s']} s, "
              f"under load {j['under_load_s']} s")
    if "llama_server" in out:
        table(f"llama-server (n_slots {out['llama_server']['n_slots']})", out["llama_server"])
        r = out["ratio_ellm_over_llama_server"]
        print(f"\nellm / llama-server: requests/s {r['requests_per_s']}, completion tokens/s "
              f"{r['completion_tokens_per_s']}, P99 TTFT streamed {r['stream_ttft_p99']} "
              f"(lower is better), P99 non-streamed {r['nonstream_total_p99']}")
    if args.json:
        print(json.dumps(out))
    ok = ellm["failed"] == 0 and ("job" not in ellm or (
        ellm["job"]["status"] == "succeeded" and ellm["job"]["attempts"] == 1 and
        ellm["job"]["equals_alone"]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
