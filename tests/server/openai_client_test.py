#!/usr/bin/env python3
"""`ellm serve` driven by real clients: the `openai` Python package and curl.

Usage: openai_client_test.py ELLM_BINARY MODEL.gguf [ELLMD_BINARY]
Run by ctest (label model) with the python of scripts/api-clients. Starts
`ellm serve` (or, given ELLMD_BINARY, `ellmd` with its http: section; with
$ELLM_TEST_KAFKA also consuming Kafka) on a free port with an API key file,
then checks: /health while
loading and after, /v1/models, chat and text completions (plain and
streamed, usage, finish reasons, stop strings, max_tokens), JSON output
under response_format (json_schema and json_object), tool calls (required,
streamed, a follow-up with the result, none), logprobs (chat,
streamed, completions), OpenAI-shaped errors
(401, 400, 404, 413, context_length_exceeded), 429 past the queue, a
disconnected stream ending its generation, a follow-up reusing the
session's tokens and a new conversation its system prompt, hostile input
(JSON nested 30,000 deep at two doors, 40 silent clients, a path that
would inject a /metrics line), TLS (with 40 clients stuck in their
handshake), and a clean exit on SIGTERM; with `ellm serve`, also
concurrent streams decoded together (batched decode) giving each the text
it gets alone.
"""
import datetime
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

KEY = "sk-test-0123456789"
failures = []


def check(cond, what):
    if cond:
        print(f"ok   {what}")
    else:
        print(f"FAIL {what}")
        failures.append(what)


DAEMON = None  # ellmd's path in daemon mode
KAFKA = os.environ.get("ELLM_TEST_KAFKA", "")


def write_keys(tmp):
    keys = os.path.join(tmp, "keys")
    with open(keys, "w") as f:
        f.write("# keys\n" + KEY + "\n")
    os.chmod(keys, 0o600)
    return keys


def start_server(ellm, model, tmp, opts):
    """`ellm serve` with flags, or ellmd with the same settings in its config."""
    keys = write_keys(tmp)
    if DAEMON is None:
        flags = {"--sessions": "sessions", "--max-queue": "max_queue", "--max-body": "max_body_bytes",
                 "--tls-cert": "tls_cert_file", "--tls-key": "tls_key_file"}
        cmd = [ellm, "serve", "--model", model, "--listen", "127.0.0.1:0", "--api-keys-file", keys,
               "--ctx", "1024", "--db", os.path.join(tmp, "ellm.db"), "--threads", "2"]
        for flag, key in flags.items():
            if key in opts:
                cmd += [flag, str(opts[key])]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        line = proc.stdout.readline()
        m = re.search(r"listening on (https?://[^\s]+)", line)
        if not m:
            proc.kill()
            raise SystemExit(f"no address printed: {line!r}")
        return proc, m.group(1)
    http = {"enabled": True, "listen": "127.0.0.1:0", "api_keys_file": keys, "context": 1024}
    http.update(opts)
    topic = f"api-test-{os.getpid()}-{int(time.time())}"
    kafka = {"enabled": False}
    if KAFKA:
        kafka = {"enabled": True, "brokers": KAFKA, "group_id": topic, "jobs_topic": topic,
                 "results_topic": topic + ".results", "dead_letter_topic": topic + ".dlq",
                 "group_instance_id": topic, "session_timeout_ms": 6000}
    config = {"model": {"path": model, "threads": 2, "context": 4096},
              "store": {"path": os.path.join(tmp, f"ellmd-{len(os.listdir(tmp))}.db")},
              "kv": {"prefix_cache_dir": ""}, "kafka": kafka, "http": http,
              "jobs": {"allowed_roots": [tmp]}, "log": {"level": "info"},
              "metrics": {"enabled": True, "listen": "127.0.0.1:0"}}
    path = os.path.join(tmp, f"ellmd-{len(os.listdir(tmp))}.yaml")
    with open(path, "w") as f:
        json.dump(config, f)  # JSON is YAML
    # ellmd logs to stdout (spdlog's default sink).
    proc = subprocess.Popen([DAEMON, "--config", path], stdout=subprocess.PIPE,
                            stderr=sys.stderr, text=True)
    metrics_port = None
    for line in proc.stdout:
        sys.stderr.write(line)
        mp = re.search(r"metrics on \S+ \(port (\d+)\)", line)
        if mp:
            metrics_port = int(mp.group(1))
        m = re.search(r"http API on (https?://[^\s]+)", line)
        if m:
            proc.metrics_port = metrics_port
            threading.Thread(target=lambda: [sys.stderr.write(l) for l in proc.stdout],
                             daemon=True).start()
            proc.config = path
            return proc, m.group(1)
    raise SystemExit(f"ellmd exited ({proc.wait()}) without serving HTTP")


def http(method, url, body=None, headers=None):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def wait_ready(base):
    seen = set()
    for _ in range(600):
        status, _, body = http("GET", base + "/health")
        seen.add(status)
        if status == 200:
            return seen
        assert status == 503 and json.loads(body)["status"] == "loading", body
        time.sleep(0.05)
    raise SystemExit("never ready")


def metric(base, name):
    _, _, body = http("GET", base + "/metrics", headers={"Authorization": "Bearer " + KEY})
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def main():
    global DAEMON
    ellm, model = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:
        DAEMON = sys.argv[3]
    print(f"mode: {'ellmd' if DAEMON else 'ellm serve'}; kafka: {KAFKA if DAEMON else 'no'}")
    tmp = tempfile.mkdtemp(prefix="ellm-api-")
    proc, base = start_server(ellm, model, tmp,
                              {"sessions": 1, "max_queue": 0, "max_body_bytes": 65536})
    try:
        run(base, ellm, model, tmp)
        hostile(base, proc)
        http_text = http_jobs(base, ellm, model, tmp)
        if DAEMON:
            # One /metrics for the daemon and its API.
            _, _, body = http("GET", f"http://127.0.0.1:{proc.metrics_port}/metrics")
            text = body.decode()
            check("ellm_up 1" in text and "ellm_http_requests_total{" in text and
                  "ellm_http_time_to_first_token_seconds_bucket" in text,
                  "ellmd's /metrics carries the API's ellm_http_* families")
        if DAEMON and KAFKA:
            kafka_id = shared_with_kafka(base, ellm, model, tmp, proc.config, http_text)
            ids_per_source(base, ellm, proc.config, f"http-job-{os.getpid()}", kafka_id)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = "hung"
        check(code == 0, f"SIGTERM ends the server with 0 (got {code})")
    tls(ellm, model, tmp)
    if DAEMON is None:
        batched_decode(ellm, model, tmp)
        http_job_survives_kill(ellm, model, tmp)
    if failures:
        print(f"{len(failures)} check(s) failed: {failures}")
        sys.exit(1)
    print("all checks passed")


def run(base, ellm, model, tmp):
    seen = wait_ready(base)
    check(200 in seen, f"/health becomes ok (statuses seen: {sorted(seen)})")
    client = openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0)

    models = client.models.list()
    ids = [m.id for m in models]
    check(len(ids) == 1 and ids[0] == os.path.splitext(os.path.basename(model))[0],
          f"/v1/models lists the file's model id ({ids})")
    mid = ids[0]
    msgs = [{"role": "system", "content": "You are brief."},
            {"role": "user", "content": "List three colours of the rainbow."}]

    r = client.chat.completions.create(model=mid, messages=msgs, max_tokens=30, temperature=0)
    text = r.choices[0].message.content
    check(r.object == "chat.completion" and r.choices[0].message.role == "assistant",
          "chat completion object and role")
    check(bool(text), f"chat completion has text: {text!r}")
    check(r.choices[0].finish_reason in ("stop", "length"), "finish_reason stop|length")
    u = r.usage
    check(u.prompt_tokens > 10 and 0 < u.completion_tokens <= 30 and
          u.total_tokens == u.prompt_tokens + u.completion_tokens, f"usage adds up: {u}")

    # Streaming gives the same greedy text, in pieces, then usage and [DONE].
    stream = client.chat.completions.create(model=mid, messages=msgs, max_tokens=30, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    pieces, roles, finish, usage = [], [], None, None
    for chunk in stream:
        if chunk.choices:
            d = chunk.choices[0].delta
            roles.append(d.role)
            pieces.append(d.content or "")
            finish = chunk.choices[0].finish_reason or finish
        else:
            usage = chunk.usage
    check("".join(pieces) == text, "streamed pieces equal the non-streamed text")
    check(roles[0] == "assistant" and len(pieces) > 2, f"first delta has the role; {len(pieces)} chunks")
    check(finish == r.choices[0].finish_reason, "stream ends with the same finish_reason")
    check(usage is not None and usage.completion_tokens == u.completion_tokens,
          "include_usage sends the usage last")
    if DAEMON:
        # ellmd's http: section serves the same server/ code as `ellm serve`,
        # whose run checks everything below.
        return

    # A stop string from the middle of the greedy text ends the reply before it.
    if len(text) > 12:
        stop = text[len(text) // 2:len(text) // 2 + 3]
        s = client.chat.completions.create(model=mid, messages=msgs, max_tokens=30, temperature=0,
                                           stop=[stop])
        check(s.choices[0].message.content == text[:text.find(stop)] and
              s.choices[0].finish_reason == "stop", f"stop {stop!r} ends the reply before it")
    else:
        check(False, f"greedy text long enough for a stop test: {text!r}")

    m3 = client.chat.completions.create(model=mid, messages=msgs, max_tokens=3, temperature=0)
    check(m3.choices[0].finish_reason == "length" and m3.usage.completion_tokens == 3,
          "max_tokens 3: finish_reason length, 3 tokens")
    mct = client.chat.completions.create(model=mid, messages=msgs, max_completion_tokens=2,
                                         temperature=0)
    check(mct.usage.completion_tokens == 2, "max_completion_tokens is honoured")

    # Seeded sampling repeats itself.
    a = client.chat.completions.create(model=mid, messages=msgs, max_tokens=12, temperature=0.9,
                                       seed=7, top_p=0.9, presence_penalty=0.5)
    b = client.chat.completions.create(model=mid, messages=msgs, max_tokens=12, temperature=0.9,
                                       seed=7, top_p=0.9, presence_penalty=0.5)
    check(a.choices[0].message.content == b.choices[0].message.content, "same seed, same text")

    # n choices: each its own reply (seed + index), decoded together; the
    # same seed gives the same choices, streamed or not.
    many = dict(model=mid, messages=msgs, max_tokens=10, temperature=0.9, seed=11, n=3)
    c1 = client.chat.completions.create(**many)
    c2 = client.chat.completions.create(**many)
    texts = [c.message.content for c in sorted(c1.choices, key=lambda c: c.index)]
    check([c.index for c in c1.choices] == [0, 1, 2] and
          texts == [c.message.content for c in sorted(c2.choices, key=lambda c: c.index)] and
          len(set(texts)) > 1,
          f"n=3: three indexed choices, repeatable with the seed, not all alike: {texts}")
    single = client.chat.completions.create(**dict(many, n=1))
    check(single.choices[0].message.content == texts[0] and
          c1.usage.completion_tokens > single.usage.completion_tokens and
          c1.usage.prompt_tokens == single.usage.prompt_tokens,
          f"choice 0 is the n=1 reply with the seed; usage counts every choice's tokens "
          f"({c1.usage.completion_tokens} vs {single.usage.completion_tokens}), the prompt once")
    parts = {}
    for chunk in client.chat.completions.create(stream=True, **many):
        for ch in chunk.choices:
            parts[ch.index] = parts.get(ch.index, "") + (ch.delta.content or "")
    check([parts.get(i) for i in range(3)] == texts,
          f"n=3 streamed: each index's pieces add up to its choice ({parts})")

    # Log probabilities: one per token, the pieces spelling the text; at
    # temperature 0 the chosen token is the most likely; streamed, the same.
    lp = client.chat.completions.create(model=mid, messages=msgs, max_tokens=12, temperature=0,
                                        logprobs=True, top_logprobs=3)
    content = lp.choices[0].logprobs.content if lp.choices[0].logprobs else []
    check(len(content) == lp.usage.completion_tokens and
          bytes(b for c in content for b in c.bytes).decode() == lp.choices[0].message.content and
          all(len(c.top_logprobs) == 3 and c.top_logprobs[0].token == c.token and
              c.logprob <= 0 for c in content),
          f"chat logprobs: {len(content)} tokens with 3 alternatives spell the reply")
    streamed_lp = []
    for chunk in client.chat.completions.create(model=mid, messages=msgs, max_tokens=12,
                                                temperature=0, logprobs=True, top_logprobs=3,
                                                stream=True):
        if chunk.choices and chunk.choices[0].logprobs and chunk.choices[0].logprobs.content:
            streamed_lp += [(c.token, round(c.logprob, 4)) for c in chunk.choices[0].logprobs.content]
    check(streamed_lp == [(c.token, round(c.logprob, 4)) for c in content],
          f"streamed logprobs equal the non-streamed ones ({len(streamed_lp)} tokens)")
    tl = client.completions.create(model=mid, prompt="The capital of France is", max_tokens=5,
                                   temperature=0, logprobs=2)
    legacy = tl.choices[0].logprobs
    check(legacy is not None and "".join(legacy.tokens) == tl.choices[0].text and
          len(legacy.token_logprobs) == len(legacy.tokens) == tl.usage.completion_tokens and
          all(len(t) >= 1 for t in legacy.top_logprobs),
          f"completions logprobs (legacy): {legacy.tokens if legacy else None}")

    # JSON under a schema always parses and validates.
    schema = {"type": "object",
              "properties": {"colour": {"type": "string", "maxLength": 12},
                             "count": {"enum": [1, 2, 3, 4, 5]}},
              "required": ["colour", "count"], "additionalProperties": False}
    j = client.chat.completions.create(
        model=mid, messages=[{"role": "user", "content": "Name a colour and a count as JSON."}],
        max_tokens=60, temperature=0.7, seed=3,
        response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": schema}})
    doc = json.loads(j.choices[0].message.content)
    check(set(doc) == {"colour", "count"} and isinstance(doc["colour"], str) and
          len(doc["colour"]) <= 12 and doc["count"] in (1, 2, 3, 4, 5),
          f"json_schema output validates: {doc}")
    jo = client.chat.completions.create(
        model=mid, messages=[{"role": "user", "content": "Reply with a JSON object."}],
        max_tokens=64, temperature=0, response_format={"type": "json_object"})
    c = jo.choices[0]
    if c.finish_reason == "stop":
        check(isinstance(json.loads(c.message.content), dict), "json_object output is an object")
    else:
        check(c.message.content.lstrip().startswith("{"), "json_object output starts an object")

    tool_calls(client, mid)

    # Text completions.
    t = client.completions.create(model=mid, prompt="The capital of France is", max_tokens=6,
                                  temperature=0)
    check(t.object == "text_completion" and t.choices[0].text and t.usage.completion_tokens <= 6,
          f"text completion: {t.choices[0].text!r}")

    # Errors, shaped as OpenAI's.
    try:
        openai.OpenAI(base_url=base + "/v1", api_key="wrong", max_retries=0).models.list()
        check(False, "a wrong key is refused")
    except openai.AuthenticationError as e:
        check(e.status_code == 401 and e.body["code"] == "invalid_api_key", "wrong key: 401")
    status, _, body = http("GET", base + "/v1/models")
    check(status == 401 and json.loads(body)["error"]["type"] == "authentication_error",
          "no key: 401 authentication_error")
    try:
        client.chat.completions.create(model=mid, messages=[], max_tokens=3)
        check(False, "empty messages are refused")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.body["param"] == "messages", "empty messages: 400, param")
    try:
        client.chat.completions.create(model=mid, messages=msgs, n=17)
        check(False, "n=17 is refused")
    except openai.BadRequestError as e:
        check(e.body["param"] == "n", "n=17 (past 16): 400 naming n")
    try:
        client.chat.completions.create(model="gpt-4o", messages=msgs, max_tokens=3)
        check(False, "an unknown model is refused")
    except openai.NotFoundError as e:
        check(e.body["code"] == "model_not_found", "unknown model: 404 model_not_found")
    try:
        client.chat.completions.create(
            model=mid, messages=[{"role": "user", "content": "word " * 1500}], max_tokens=3)
        check(False, "a prompt past the context is refused")
    except openai.BadRequestError as e:
        check(e.body["code"] == "context_length_exceeded", "too long: context_length_exceeded")
    status, _, body = http("POST", base + "/v1/chat/completions", b"{not json",
                           {"Authorization": "Bearer " + KEY})
    check(status == 400 and json.loads(body)["error"]["code"] == "invalid_json", "bad JSON: 400")
    status, _, body = http("GET", base + "/v1/nothing", headers={"Authorization": "Bearer " + KEY})
    check(status == 404 and "error" in json.loads(body), "unknown route: 404 JSON")
    status, _, _ = http("POST", base + "/v1/completions", b"x" * 70000,
                        {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    check(status == 413, f"a body past --max-body: 413 (got {status})")

    # curl streams Server-Sent Events ending with [DONE].
    out = subprocess.run(
        ["curl", "-sN", "--compressed", base + "/v1/chat/completions", "-H",
         "Authorization: Bearer " + KEY, "-H", "Content-Type: application/json", "-d",
         json.dumps({"model": mid, "messages": msgs, "max_tokens": 5, "stream": True})],
        capture_output=True, text=True, timeout=120).stdout
    events = [l for l in out.split("\n") if l.startswith("data: ")]
    check(len(events) >= 3 and events[-1] == "data: [DONE]" and
          json.loads(events[0][6:])["object"] == "chat.completion.chunk",
          f"curl: {len(events)} SSE events ending with [DONE]")

    # Past the queue: 429 with Retry-After while a stream holds the only session.
    long_msgs = [{"role": "user", "content": "Write a long story about a lighthouse."}]
    got_first = threading.Event()
    holder_done = threading.Event()

    def hold():
        s = client.chat.completions.create(model=mid, messages=long_msgs, max_tokens=120,
                                           temperature=0, stream=True)
        for _ in s:
            got_first.set()
        holder_done.set()

    th = threading.Thread(target=hold)
    th.start()
    got_first.wait(60)
    status, headers, body = http("POST", base + "/v1/chat/completions",
                                 {"model": mid, "messages": msgs, "max_tokens": 3},
                                 {"Authorization": "Bearer " + KEY,
                                  "Content-Type": "application/json"})
    busy = not holder_done.is_set()
    check(not busy or (status == 429 and "Retry-After" in headers and
                       json.loads(body)["error"]["code"] == "rate_limit_exceeded"),
          f"a request past the queue: 429 with Retry-After (got {status})")
    check(busy, "the holding stream was still running when the extra request came")
    th.join()

    # A client that disconnects ends its generation at the next token.
    before = metric(base, 'ellm_http_tokens_total{kind="completion"}')
    s = client.chat.completions.create(model=mid, messages=long_msgs, max_tokens=400,
                                       temperature=0, stream=True)
    n = 0
    for _ in s:
        n += 1
        if n == 3:
            break
    s.close()
    time.sleep(0.5)
    r2 = client.chat.completions.create(model=mid, messages=msgs, max_tokens=3, temperature=0)
    after = metric(base, 'ellm_http_tokens_total{kind="completion"}')
    check(r2.usage.completion_tokens == 3 and after - before - 3 < 100,
          f"a disconnected stream stopped early ({after - before - 3:.0f} of 400 tokens made)")

    # A client that gives up on a non-streamed reply (its timeout) ends that
    # generation too: nothing was written to it, the server watches the socket.
    # Judged by when the token count stops growing after the client left, not
    # by how many tokens were made: that depends on the CPU's speed (900
    # tokens take this model about 4 s on 2 fast cores).
    before = metric(base, 'ellm_http_tokens_total{kind="completion"}')
    gone0 = metric(base, "ellm_http_client_disconnects_total")
    impatient = openai.OpenAI(base_url=base + "/v1", api_key=KEY, timeout=1.0, max_retries=0)
    try:
        impatient.chat.completions.create(model=mid, messages=long_msgs, max_tokens=900,
                                          temperature=0)
        timed_out = False
    except openai.APITimeoutError:
        timed_out = True
    left = time.monotonic()
    check(timed_out, "the impatient client timed out")
    made = metric(base, 'ellm_http_tokens_total{kind="completion"}')
    still_since = time.monotonic()
    while time.monotonic() - still_since < 0.5 and time.monotonic() - left < 10:
        time.sleep(0.05)
        now = metric(base, 'ellm_http_tokens_total{kind="completion"}')
        if now != made:
            made, still_since = now, time.monotonic()
    made -= before
    r3 = client.chat.completions.create(model=mid, messages=msgs, max_tokens=3, temperature=0)
    gone = metric(base, "ellm_http_client_disconnects_total") - gone0
    check(r3.usage.completion_tokens == 3 and made < 850 and still_since - left < 1.5 and
          gone == 1,
          f"a non-streamed reply whose client left stopped early ({made:.0f} of 900 tokens made, "
          f"the last {still_since - left:.2f} s after the client left, {gone:.0f} disconnect "
          f"counted)")

    # A follow-up continues the session: the first turn's tokens are reused.
    reused0 = metric(base, 'ellm_http_tokens_total{kind="reused"}')
    first = client.chat.completions.create(model=mid, messages=msgs, max_tokens=20, temperature=0)
    follow = msgs + [{"role": "assistant", "content": first.choices[0].message.content},
                     {"role": "user", "content": "And one more?"}]
    client.chat.completions.create(model=mid, messages=follow, max_tokens=5, temperature=0)
    reused = metric(base, 'ellm_http_tokens_total{kind="reused"}') - reused0
    check(reused >= first.usage.prompt_tokens,
          f"a follow-up reuses the first turn ({reused:.0f} tokens, prompt {first.usage.prompt_tokens})")
    # A new conversation with the same system prompt keeps the shared start
    # of a session that held another (usage says how much, as OpenAI's
    # cached_tokens).
    other = client.chat.completions.create(
        model=mid, messages=[msgs[0], {"role": "user", "content": "Name two oceans."}],
        max_tokens=5, temperature=0)
    cached = (other.usage.prompt_tokens_details.cached_tokens
              if other.usage.prompt_tokens_details else None)
    check(cached is not None and 5 < cached < other.usage.prompt_tokens,
          f"the same system prompt is reused ({cached} of {other.usage.prompt_tokens} tokens cached)")
    check(metric(base, "ellm_http_time_to_first_token_seconds_count") > 0, "TTFT histogram counts")


def tool_calls(client, mid):
    """Function calling: a required call of get_weather (whole and streamed,
    reassembled by the client's stream manager), then a follow-up with its
    result under tool_choice none, which answers as without tools."""
    started = time.time()
    weather = {"type": "function", "function": {
        "name": "get_weather", "description": "The current weather in a city", "strict": True,
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string", "maxLength": 24}},
                       "required": ["city"], "additionalProperties": False}}}
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    call = dict(model=mid, messages=ask, tools=[weather], tool_choice="required", max_tokens=48,
                temperature=0)
    r = client.chat.completions.create(**call)
    c = r.choices[0]
    calls = c.message.tool_calls or []
    args = json.loads(calls[0].function.arguments) if calls else {}
    check(c.finish_reason == "tool_calls" and c.message.content is None and len(calls) >= 1 and
          calls[0].type == "function" and calls[0].function.name == "get_weather" and
          calls[0].id.startswith("call_") and isinstance(args.get("city"), str),
          f"tool_choice required: a call of get_weather with a string city "
          f"({c.finish_reason}, {[(t.function.name, t.function.arguments) for t in calls]})")
    with client.chat.completions.stream(**call, stream_options={"include_usage": True}) as s:
        for _ in s:
            pass
        final = s.get_final_completion()
    fc = final.choices[0]
    got = fc.message.tool_calls or []
    check(fc.finish_reason == "tool_calls" and len(got) == len(calls) and
          got[0].function.name == "get_weather" and
          got[0].function.arguments == calls[0].function.arguments and
          got[0].function.parsed_arguments == args and got[0].id.startswith("call_") and
          final.usage.completion_tokens == r.usage.completion_tokens,
          f"streamed tool calls reassembled by the openai client: "
          f"{[(t.function.name, t.function.arguments) for t in got]}, {fc.finish_reason}")
    ids = [t.id for t in calls + got]
    check(len(set(ids)) == len(ids), f"tool call ids are unique per call: {ids}")

    if calls:
        follow = ask + [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": calls[0].id, "type": "function",
                             "function": {"name": "get_weather",
                                          "arguments": calls[0].function.arguments}}]},
            {"role": "tool", "tool_call_id": calls[0].id,
             "content": json.dumps({"temperature_c": 21, "sky": "sunny"})}]
        # The history is accepted and rendered (Gemma's template: the call
        # as the JSON the model writes, the result as a user turn). Under
        # tool_choice auto the 270M model calls again; none asks for text,
        # which must be the reply without tools.
        f = client.chat.completions.create(model=mid, messages=follow, tools=[weather],
                                           tool_choice="none", max_tokens=16, temperature=0)
        plain = client.chat.completions.create(model=mid, messages=follow, max_tokens=16,
                                               temperature=0)
        fm = f.choices[0]
        check(fm.message.tool_calls is None and isinstance(fm.message.content, str) and
              fm.message.content.strip() != "" and fm.finish_reason in ("stop", "length"),
              f"the follow-up with the tool's result, tool_choice none, is a text reply: "
              f"{fm.message.content!r} ({fm.finish_reason})")
        check(fm.message.content == plain.choices[0].message.content,
              "tool_choice none: the reply without tools")
    print(f"tool calling checks: {time.time() - started:.1f} s")


def curl_job(base, doc, key, pipeline="summarize-report"):
    """POST /v1/jobs as a multipart upload with curl; (status, body)."""
    out = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", base + "/v1/jobs",
                          "-H", "Authorization: Bearer " + KEY, "-H", "Idempotency-Key: " + key,
                          "-F", "pipeline=" + pipeline, "-F", "file=@" + doc],
                         capture_output=True, text=True, timeout=120).stdout
    body, _, code = out.rpartition("\n")
    return int(code), json.loads(body)


def wait_job(base, job_id, timeout=600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, _, body = http("GET", base + "/v1/jobs/" + job_id,
                               headers={"Authorization": "Bearer " + KEY})
        job = json.loads(body)
        if status == 503:  # still loading, or the job service not attached yet
            time.sleep(0.2)
            continue
        if status != 200 or job.get("status") in ("succeeded", "failed"):
            return status, job
        time.sleep(0.2)
    return 0, {}


SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configs",
                      "samples", "northwind-annual-report-2025.pdf")


ALONE = {}


def alone(ellm, model, tmp, ctx):
    """The summarize-report job run alone by the CLI: its result text (run
    once per context size)."""
    if ctx in ALONE:
        return ALONE[ctx]
    r = subprocess.run([ellm, "summarize", SAMPLE, "--model", model, "--db",
                        os.path.join(tmp, f"alone-{ctx}.db"), "--ctx", str(ctx), "--threads", "2",
                        "--json"], capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"the job alone (ellm summarize --ctx {ctx}) succeeds")
    ALONE[ctx] = json.loads(r.stdout)["text"] if r.returncode == 0 else None
    return ALONE[ctx]


def http_jobs(base, ellm, model, tmp):
    """Document jobs over HTTP: validated as Kafka messages, run through the
    same pipelines and store, idempotent by Idempotency-Key."""
    key = f"http-job-{os.getpid()}"
    status, body = curl_job(base, SAMPLE, key)
    check(status == 202 and body.get("id") == key and body.get("status") == "queued",
          f"POST /v1/jobs (upload): 202 queued ({status} {body})")
    again, body2 = curl_job(base, SAMPLE, key)
    check(again == 200 and body2.get("id") == key, f"the same Idempotency-Key again: 200 ({again})")
    status, job = wait_job(base, key)
    check(status == 200 and job.get("status") == "succeeded" and job.get("attempts") == 1 and
          job["documents"][0]["path"].startswith("inline:"),
          f"the HTTP job succeeded once ({job.get('status')}, {job.get('error')})")
    ctx = 4096 if DAEMON else 1024
    check(job.get("result", {}).get("text") == alone(ellm, model, tmp, ctx),
          "the HTTP job's result equals the same job run alone")
    status, _, body = http("GET", base + "/v1/jobs?status=succeeded&limit=5",
                           headers={"Authorization": "Bearer " + KEY})
    listed = [j["id"] for j in json.loads(body)["data"]]
    check(status == 200 and key in listed, "GET /v1/jobs?status=succeeded lists it")
    status, _, body = http("GET", base + "/v1/jobs/no-such-job",
                           headers={"Authorization": "Bearer " + KEY})
    check(status == 404 and json.loads(body)["error"]["code"] == "job_not_found",
          "an unknown job: 404")
    bad, body = curl_job(base, SAMPLE, key + "-x", pipeline="no-such-pipeline")
    check(bad == 400 and body["error"]["code"] == "unknown_pipeline",
          f"an unknown pipeline: 400 unknown_pipeline ({bad})")
    status, _, body = http("POST", base + "/v1/jobs",
                           {"pipeline": "document-stats", "documents": [{"path": "/etc/passwd"}]},
                           {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    check(status == 400 and json.loads(body)["error"]["code"] == "path_not_allowed",
          "a path outside jobs.allowed_roots: 400 path_not_allowed")
    return job.get("result", {}).get("text")


def http_job_survives_kill(ellm, model, tmp):
    """`ellm serve` SIGKILLed while an HTTP job runs: the job comes back from
    the store's inbox at the next start and finishes (attempt 2)."""
    work = os.path.join(tmp, "kill")
    os.makedirs(work, exist_ok=True)
    proc, base = start_server(ellm, model, work, {})
    wait_ready(base)
    key = f"http-kill-{os.getpid()}"
    status, _ = curl_job(base, SAMPLE, key)
    check(status == 202, f"job accepted before the kill ({status})")
    deadline = time.time() + 120
    while time.time() < deadline:
        _, _, body = http("GET", base + "/v1/jobs/" + key, headers={"Authorization": "Bearer " + KEY})
        if json.loads(body).get("status") == "running":
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    proc, base = start_server(ellm, model, work, {})
    try:
        wait_ready(base)
        status, job = wait_job(base, key)
        check(job.get("status") == "succeeded" and job.get("attempts") == 2,
              f"after SIGKILL and a restart the job finished ({job.get('status')}, "
              f"attempts {job.get('attempts')}, HTTP {status}: {job.get('error')})")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def shared_with_kafka(base, ellm, model, tmp, config, http_text):
    """A Kafka job and API requests on one engine: the requests go first (the
    job yields between slices), and the job's result equals the same job run
    alone by `ellm summarize`."""
    doc = SAMPLE
    alone_text = alone(ellm, model, tmp, 4096)
    job_id = f"api-shared-{os.getpid()}"
    sub = subprocess.run([ellm, "submit", doc, "--inline", "--id", job_id, "--config", config],
                         capture_output=True, text=True, timeout=60)
    check(sub.returncode == 0, f"ellm submit: {sub.stderr.strip()}")
    db = json.load(open(config))["store"]["path"]

    def status():
        r = subprocess.run([ellm, "jobs", "show", job_id, "--json", "--db", db],
                           capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 else None

    deadline = time.time() + 120
    while time.time() < deadline and (status() or {}).get("status") != "running":
        time.sleep(0.05)
    time.sleep(0.3)  # into the job's prefill or decoding (about 1 s in all on a fast CPU)
    client = openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0)
    mid = client.models.list().data[0].id
    sent = time.time()
    r = client.chat.completions.create(model=mid, messages=[{"role": "user", "content": "Hi"}],
                                       max_tokens=5, temperature=0)
    answered = time.time()
    deadline = time.time() + 600
    job = status()
    while time.time() < deadline and job and job.get("status") not in ("succeeded", "failed"):
        time.sleep(0.2)
        job = status()

    def when(key):
        at = (job or {}).get(key)
        return datetime.datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() if at else 0

    # By the store's clock (the same machine's): the request came after the
    # job started and was answered before it finished, however fast the CPU.
    check(r.usage.completion_tokens == 5 and when("started_at") < sent and
          answered < when("finished_at"),
          f"an API request answered in {answered - sent:.2f} s while the Kafka job ran (sent "
          f"{sent - when('started_at'):.2f} s after it started, answered "
          f"{when('finished_at') - answered:.2f} s before it finished)")
    text = ((job or {}).get("result") or {}).get("text")
    check(job is not None and job.get("status") == "succeeded" and job.get("attempts") == 1,
          f"the Kafka job succeeded once ({(job or {}).get('status')}, "
          f"attempts {(job or {}).get('attempts')})")
    check(text is not None and text == alone_text,
          "the Kafka job's result equals the same job run alone")
    check(text is not None and text == http_text,
          "the Kafka job's result equals the same job submitted over HTTP")
    return job_id


def ids_per_source(base, ellm, config, http_id, kafka_id):
    """Issue 53: HTTP and Kafka jobs live apart. A Kafka job whose id equals a
    finished HTTP job's runs as a job of its own (it used to be "already
    done" and publish the HTTP job's result); the API neither reads nor
    lists Kafka jobs (a Kafka id may not take the HTTP jobs' store prefix:
    JobMessageTest)."""
    auth = {"Authorization": "Bearer " + KEY}
    status, _, _ = http("GET", base + "/v1/jobs/" + kafka_id, headers=auth)
    check(status == 404, f"GET /v1/jobs/<a Kafka job's id>: 404 ({status})")
    _, _, body = http("GET", base + "/v1/jobs?limit=100", headers=auth)
    listed = [j["id"] for j in json.loads(body)["data"]]
    check(http_id in listed and kafka_id not in listed and
          not any(i.startswith("http:") for i in listed),
          f"GET /v1/jobs lists the HTTP jobs by their own ids, no Kafka job ({listed})")
    _, _, before = http("GET", base + "/v1/jobs/" + http_id, headers=auth)
    db = json.load(open(config))["store"]["path"]
    sub = subprocess.run([ellm, "submit", SAMPLE, "--inline", "--id", http_id, "--config", config,
                          "--pipeline", "document-stats"],
                         capture_output=True, text=True, timeout=60)
    check(sub.returncode == 0, f"ellm submit with the HTTP job's id: {sub.stderr.strip()}")
    job = None
    deadline = time.time() + 300
    while time.time() < deadline:
        r = subprocess.run([ellm, "jobs", "show", http_id, "--json", "--db", db],
                           capture_output=True, text=True)
        job = json.loads(r.stdout) if r.returncode == 0 else None
        if job and job.get("status") in ("succeeded", "failed"):
            break
        time.sleep(0.2)
    check(job is not None and job.get("status") == "succeeded" and
          job.get("pipeline") == "document-stats" and job.get("attempts") == 1,
          f"the Kafka job with the HTTP job's id ran as its own job ({(job or {}).get('status')}, "
          f"{(job or {}).get('pipeline')}, attempts {(job or {}).get('attempts')})")
    _, _, after = http("GET", base + "/v1/jobs/" + http_id, headers=auth)
    check(json.loads(after)["result"] == json.loads(before)["result"] and
          json.loads(after)["pipeline"] == "summarize-report",
          "the HTTP job with that id is unchanged")


def batched_decode(ellm, model, tmp):
    """Four concurrent replies in four sessions decode together, one pass over
    the weights per step for all of them, and each says what it says alone."""
    proc, base = start_server(ellm, model, tmp, {"sessions": 4, "max_queue": 4})
    try:
        wait_ready(base)
        client = openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0)
        mid = client.models.list().data[0].id
        # Long answers, so that the few milliseconds between the four
        # requests' arrivals are small beside the time they decode together.
        asks = ["Write a story about a dragon.", "Count from one to fifty in words.",
                "Describe the ocean in detail.", "Explain how rain forms, step by step."]

        def ask(q, stream):
            msgs = [{"role": "user", "content": q}]
            if not stream:
                return client.chat.completions.create(model=mid, messages=msgs, max_tokens=120,
                                                      temperature=0).choices[0].message.content
            s = client.chat.completions.create(model=mid, messages=msgs, max_tokens=120,
                                               temperature=0, stream=True)
            return "".join((c.choices[0].delta.content or "") for c in s if c.choices)

        alone = [ask(q, False) for q in asks]
        passes0 = metric(base, "ellm_http_decode_passes_total")
        rows0 = metric(base, "ellm_http_decode_rows_total")
        got = [None] * len(asks)
        threads = [threading.Thread(target=lambda i=i: got.__setitem__(i, ask(asks[i], i % 2 == 1)))
                   for i in range(len(asks))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        passes = metric(base, "ellm_http_decode_passes_total") - passes0
        rows = metric(base, "ellm_http_decode_rows_total") - rows0
        differ = [(a, b) for a, b in zip(got, alone) if a != b]
        check(not differ, f"concurrent replies equal the replies alone (differing: {differ})")
        check(passes > 0 and rows / passes >= 2.5,
              f"concurrent streams share decode passes ({rows:.0f} tokens in {passes:.0f} passes)")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)



def hold_silent(port, count, payload):
    """`count` connections that send `payload` and then nothing."""
    socks = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if payload:
            s.sendall(payload)
        socks.append(s)
    return socks


def health_within(url, seconds, cacert=None):
    started = time.time()
    cmd = ["curl", "-s", "--max-time", str(seconds), url + "/health"]
    if cacert:
        cmd[1:1] = ["--cacert", cacert]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    return '"ok"' in out and time.time() - started < seconds


def hostile(base, proc):
    """Issue 53 at this door (`ellm serve`, or ellmd's http: section)."""
    auth = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}
    deep = "[" * 30000 + "]" * 30000  # 60 KB: under this server's 64 KiB body limit
    for path, body in (("/v1/chat/completions",
                        '{"model": "m", "messages": [{"role": "user", "content": "hi"}], "x": '
                        + deep + "}"),
                       ("/v1/jobs", '{"pipeline": "summarize-report", "params": ' + deep + "}")):
        status, _, reply = http("POST", base + path, body.encode(), auth)
        check(status == 400 and b"deep" in reply.lower(),
              f"JSON nested 30,000 deep at {path}: 400 naming the depth ({status})")
    port = int(base.rsplit(":", 1)[1])
    socks = hold_silent(port, 40, b"GET /health HTTP/1.1\r\nHo")
    try:
        check(health_within(base, 2), "/health answers within 2 s beside 40 silent clients")
    finally:
        for s in socks:
            s.close()
    status, _, _ = http("GET", base + "/x%22%7D%201%0Aellm_injected%201%0A%23")
    metrics = (f"http://127.0.0.1:{proc.metrics_port}/metrics" if DAEMON else base + "/metrics")
    _, _, body = http("GET", metrics, headers={"Authorization": "Bearer " + KEY})
    check(status == 401 and b"ellm_injected" not in body,
          f"a path cannot write a line into /metrics ({status})")


def tls(ellm, model, tmp):
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "2", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    proc, base = start_server(ellm, model, tmp, {"tls_cert_file": cert, "tls_key_file": key})
    try:
        check(base.startswith("https://"), f"TLS server prints https ({base})")
        for _ in range(600):
            out = subprocess.run(["curl", "-s", "--cacert", cert, base + "/health"],
                                 capture_output=True, text=True).stdout
            if '"ok"' in out:
                break
            time.sleep(0.05)
        check('"ok"' in out, "curl over TLS, verifying the certificate: /health ok")
        plain = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                base.replace("https://", "http://") + "/health"],
                               capture_output=True, text=True).stdout
        check(plain != "200", f"plain HTTP to the TLS port is not served (got {plain!r})")
        # Issue 53: TLS ends at the front gate; stuck handshakes hold nothing.
        port = int(base.rsplit(":", 1)[1])
        socks = hold_silent(port, 20, b"") + hold_silent(port, 20, b"\x16\x03\x01\x02\x00\x01")
        try:
            check(health_within(base, 2, cert),
                  "/health over TLS within 2 s beside 40 clients stuck in their handshake")
        finally:
            for s in socks:
                s.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
