#!/usr/bin/env python3
"""Writes the seed inputs of the JSON fuzz targets (issue 53):
tests/ingest/job_message_corpus/seed-*.json (job_message_fuzz) and
tests/server/openai_request_corpus/seed-*.json (openai_request_fuzz).

Seeds named seed-deep-* nest past the 64-level limit and must be refused
naming it; the corpus tests (job_message_corpus_test.cc,
openai_request_corpus_test.cc) replay every file and check that. Rerun after
changing this script; scripts/fuzz adds what the fuzzer finds beside them.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)


def arrays(n, inner="1"):
    return "[" * n + inner + "]" * n


def write(folder, name, text):
    path = os.path.join(TESTS, folder, "seed-" + name + ".json")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def job_messages():
    d = "ingest/job_message_corpus"
    doc = {"path": "/nonexistent-ellm-fuzz-root/a.txt"}
    full = {"version": 1, "id": "q3-2026", "pipeline": "summarize-report",
            "documents": [doc, {"name": "m.txt", "content_base64": "aGk="}],
            "params": {"lang": "en", "n": [1, {"k": None}]}, "reply_to": "team.results",
            "timeout_s": 600}
    write(d, "full", json.dumps(full))
    write(d, "minimal", json.dumps({"id": "j", "pipeline": "document-stats", "documents": [doc]}))
    write(d, "inline", json.dumps({"id": "i", "pipeline": "document-stats",
                                   "documents": [{"name": "a.txt", "content_base64": "aGVsbG8="}]}))
    write(d, "bad-version", '{"id":"v","version":{"a":[1,2]},"pipeline":"x","documents":[]}')
    write(d, "bad-timeout", '{"id":"t","timeout_s":[[[1]]],"pipeline":"document-stats"}')
    write(d, "strings", '{"id":"s","pipeline":"document-stats","params":{"t":"[[[{{{\\"\\\\"},'
             '"documents":[{"name":"\\u00e9\\ud83d\\ude00","content_base64":"aGk="}]}')
    write(d, "truncated", '{"id":"x","pipeline":"document-stats","documents":[{"path":"/a')
    write(d, "not-json", "this is not JSON {")
    write(d, "at-limit", '{"id":"l","pipeline":"document-stats","documents":[{"name":"a",'
          '"content_base64":"aGk="}],"params":{"x":' + arrays(62) + '}}')
    write(d, "deep-params", '{"id":"d","pipeline":"document-stats","params":{"x":' +
          arrays(63) + '}}')
    write(d, "deep-open", '{"x":' + "[" * 2000)
    write(d, "deep-objects", '{"a":' * 100 + "1" + "}" * 100)


def openai_requests():
    d = "server/openai_request_corpus"
    user = {"role": "user", "content": "hi"}
    write(d, "chat", json.dumps({"model": "m", "messages": [user], "max_tokens": 4,
                                 "temperature": 0, "stop": ["\n"], "seed": 1}))
    write(d, "completion", json.dumps({"prompt": "once upon", "max_tokens": 3, "logprobs": 2}))
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}},
                                               "b": {"enum": ["x", "y"]}},
              "required": ["a"], "$defs": {"n": {"$ref": "#/$defs/n"}}}
    write(d, "json-schema", json.dumps({"messages": [user], "response_format": {
        "type": "json_schema", "json_schema": {"name": "n", "schema": schema}}}))
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    turns = [user, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\":" + arrays(100) + "}"}}]},
             {"role": "tool", "tool_call_id": "call_1", "content": "20 C"}]
    write(d, "tools", json.dumps({"messages": turns, "tools": [tool], "tool_choice": "auto",
                                  "parallel_tool_calls": False}))
    write(d, "bad-pointer", json.dumps({"messages": [user], "response_format": {
        "type": "json_schema", "json_schema": {"schema": {"$ref": "#/$defs/a~2"}}}}))
    write(d, "truncated", '{"messages":[{"role":"user","content":"h')
    write(d, "deep-body", '{"messages":[{"role":"user","content":"hi"}],"x":' + "[" * 2000)
    nested = {"type": "string"}
    for _ in range(70):
        nested = {"type": "array", "items": nested}
    write(d, "deep-schema", json.dumps({"messages": [user], "response_format": {
        "type": "json_schema", "json_schema": {"name": "n", "schema": nested}}}))
    params = {"type": "object", "properties": {"a": json.loads(arrays(70))}}
    write(d, "deep-tools", json.dumps({"messages": [user], "tools": [
        {"type": "function", "function": {"name": "f", "parameters": params}}]}))


if __name__ == "__main__":
    job_messages()
    openai_requests()
