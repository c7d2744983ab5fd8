"""Schemathesis hooks for ListStore's API fuzzing (SchemathesisTests, run by .ci/run).

They keep the generated requests within what docs/openapi.json cannot say:

* A long poll waits up to `wait` seconds (30 by default), and a change stream never ends
  by itself: every request for a list's changes asks for a long poll (from seq 0 unless
  it says where) of at most a second, so that none outlives the run's 10 s request
  timeout by design.
* A place is given by at most one of `at`, `before` and `after` (exactly one of
  `before` and `after` for an item placed next to another): extra ones are dropped.
* The ids in a list's body do not repeat (among sections, and among items): a repeated
  one is dropped.
"""

import os

import schemathesis

PLACES = ("at", "before", "after")


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    path = case.operation.path
    query = dict(case.query or {})
    if path.endswith("/changes"):
        wait = query.get("wait", 1)
        if isinstance(wait, (int, float)) and not isinstance(wait, bool):
            query["wait"] = min(max(wait, 0), 1)
        elif wait is not None and not isinstance(wait, str):
            query["wait"] = 1
        # A long poll needs the position to follow from (a stream would start with a
        # snapshot, and not end).
        if "after" not in query and not (case.headers or {}).get("Last-Event-ID"):
            query["after"] = 0
        headers = dict(case.headers or {})
        headers["Accept"] = "application/json"
        case.headers = headers
    elif case.method == "POST" and path.endswith(("/sections", "/items")):
        given = [key for key in PLACES if key in query]
        for key in given[1:]:
            del query[key]
        if path == "/v1/lists/{name}/items" and not given:
            query["after"] = 1
    case.query = query
    if case.method == "PUT" and isinstance(case.body, dict):
        sections = case.body.get("sections")
        if isinstance(sections, list):
            unique_ids(sections)
    return None


def key(id):
    # 4425 and 4425.0 are one id.
    if isinstance(id, (int, float)) and not isinstance(id, bool) and float(id).is_integer():
        return int(id)
    return repr(id)


def unique_ids(sections):
    seen_sections, seen_items = set(), set()
    for section in sections:
        if not isinstance(section, dict):
            continue
        if "id" in section:
            if key(section["id"]) in seen_sections:
                del section["id"]
            else:
                seen_sections.add(key(section["id"]))
        items = section.get("items")
        for index, item in enumerate(items if isinstance(items, list) else []):
            # A wrapper: exactly "id" and "value".
            if isinstance(item, dict) and set(item) == {"id", "value"}:
                if key(item["id"]) in seen_items:
                    items[index] = {"value": item["value"]}
                else:
                    seen_items.add(key(item["id"]))


@schemathesis.hook
def after_call(ctx, case, response):
    # Each request's operation and status, a line each, where the run asked for them: the
    # test counts them, and tells them apart by operation and status.
    path = os.environ.get("LISTSTORE_SCHEMATHESIS_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{case.method} {case.operation.path} {response.status_code}\n")
