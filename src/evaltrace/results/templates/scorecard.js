// The scorecard's grid and detail view. Every value from the run is put on the page as
// text (textContent, properties), never parsed as markup.
(function () {
  "use strict";

  var RAW = JSON.parse(document.getElementById("scorecard-data").textContent);
  var DEFAULTS = RAW.defaults;
  // A large run's data holds the grid's columns of each entry; each entry whole is in the
  // chunk of its position (RAW.chunk entries each), parsed when the page first needs it.
  var CHUNK = RAW.chunk;
  var TRACE_SPANS = RAW.trace_spans;

  // The data leaves out every field at its default value; put them back first.
  function fill(object, defaults) {
    Object.keys(defaults).forEach(function (key) {
      if (!(key in object)) {
        var value = defaults[key];
        object[key] = value !== null && typeof value === "object" ? JSON.parse(JSON.stringify(value)) : value;
      }
    });
    return object;
  }

  function fillSpan(span) {
    fill(span, DEFAULTS.span);
    span.messages.forEach(function (message) { fill(message, DEFAULTS.message); });
    span.children.forEach(fillSpan);
  }

  function fillEntry(entry) {
    fill(entry, DEFAULTS.entry);
    entry.evaluations.forEach(function (evaluation) { fill(evaluation, DEFAULTS.evaluation); });
    entry.trace.forEach(fillSpan);
    return entry;
  }

  var DATA = fill(RAW.card, DEFAULTS.card);
  DATA.entries.forEach(fillEntry);
  var chunks = Object.create(null);

  // An entry whole (its input, output, evaluations' details and trace), by position.
  function full(position) {
    if (!CHUNK) return DATA.entries[position];
    var number = Math.floor(position / CHUNK);
    if (!chunks[number]) {
      var element = document.getElementById("scorecard-chunk-" + number);
      chunks[number] = JSON.parse(element.textContent).map(fillEntry);
    }
    return chunks[number][position % CHUNK];
  }

  var entries = DATA.entries;
  var evaluators = DATA.evaluators;
  var threshold = DATA.threshold;
  var hasBaseline = DATA.baseline !== null;
  var SVG = "http://www.w3.org/2000/svg";

  var grid = document.getElementById("grid");
  var thead = grid.tHead;
  var tbody = grid.tBodies[0];
  var filterInput = document.getElementById("filter");
  var statusSelect = document.getElementById("status-filter");
  var pageSizeSelect = document.getElementById("page-size");
  var countLabel = document.getElementById("count");
  var pageLabel = document.getElementById("page");
  var prevButton = document.getElementById("prev");
  var nextButton = document.getElementById("next");
  var dialog = document.getElementById("detail");
  var detailTitle = document.getElementById("detail-title");
  var detailBody = document.getElementById("detail-body");

  // Failed and errored entries first: what a reviewer opens the page for.
  var DEFAULT_SORT = { key: "status", dir: 1 };
  var STATUS_RANK = {
    ERROR: 0, TIMED_OUT: 1, LOG_FILE_ERROR: 2, FAILED_SCORE_ZERO: 3,
    FAILED_PARTIAL_SCORE: 4, NO_SCORE_LOGGED: 5, SUCCESS: 9
  };
  var sortLabel = document.getElementById("sort-label");
  var sortReset = document.getElementById("sort-reset");

  var state = {
    filter: "",
    status: "",
    sortKey: DEFAULT_SORT.key,
    sortDir: DEFAULT_SORT.dir,
    page: 0,
    pageSize: Number(pageSizeSelect.value),
    rows: [],
    opened: null
  };

  // Each entry's evaluations by evaluator name, and its text for the filter (built lazily).
  var byEvaluator = entries.map(function (entry) {
    var found = Object.create(null);  // evaluator names are data: "constructor" is one
    entry.evaluations.forEach(function (evaluation) {
      found[evaluation.evaluator] = evaluation;
    });
    return found;
  });
  var searchText = new Array(entries.length);

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function own(object, key) {
    return Object.prototype.hasOwnProperty.call(object, key);
  }

  function asText(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "string") return value;
    return JSON.stringify(value, null, 2);
  }

  function formatScore(score) {
    return score === null || score === undefined ? "—" : score.toFixed(3);
  }

  function formatSeconds(seconds) {
    if (seconds < 1) return (seconds * 1000).toFixed(0) + " ms";
    return seconds.toFixed(2) + " s";
  }

  function scoreColour(score) {
    return "hsl(" + Math.round(score * 120) + ", 62%, 80%)";
  }

  function searchable(index) {
    if (searchText[index] === undefined) {
      var entry = full(index);
      searchText[index] = [
        entry.name, entry.description || "", entry.status, asText(entry.input),
        asText(entry.output), asText(entry.eval_output)
      ].join("\n").toLowerCase();
    }
    return searchText[index];
  }

  // --- columns and sorting -------------------------------------------------------------

  // The app's cost per entry: a column only when some entry called a model.
  var hasSpend = entries.some(function (entry) { return entry.model_calls > 0; });

  var columns = [
    { key: "index", label: "#" },
    { key: "name", label: "Entry" },
    { key: "status", label: "Status" },
    { key: "duration", label: "Time" }
  ].concat(evaluators.map(function (name) {
    return { key: "ev:" + name, label: name, evaluator: name };
  })).concat(hasSpend ? [{ key: "cost", label: "Cost" }] : []);

  function sortValue(index, key) {
    var entry = entries[index];
    if (key === "index") return entry.index;
    if (key === "name") return entry.name.toLowerCase();
    if (key === "status") {
      var rank = own(STATUS_RANK, entry.status) ? STATUS_RANK[entry.status] : 8;
      return rank * 1e9 + entry.index;  // failures first, each status in entry order
    }
    if (key === "duration") return entry.duration_s;
    if (key === "cost") return entry.cost;
    var evaluation = byEvaluator[index][key.slice(3)];
    if (!evaluation) return null;
    if (evaluation.score !== null) return evaluation.score;
    return evaluation.error ? -1 : -0.5;
  }

  function compareRows(a, b) {
    var x = sortValue(a, state.sortKey);
    var y = sortValue(b, state.sortKey);
    // Entries without the evaluator go last whichever way the column is sorted.
    if (x === null && y === null) return a - b;
    if (x === null) return 1;
    if (y === null) return -1;
    if (x < y) return -state.sortDir;
    if (x > y) return state.sortDir;
    return a - b;
  }

  function describeSort() {
    var column = columns.filter(function (c) { return c.key === state.sortKey; })[0];
    var name = column.key === "index" ? "entry number" : column.label;
    var text;
    if (column.key === "status") {
      text = "status, " + (state.sortDir > 0 ? "failures first" : "successes first");
    } else {
      text = name + ", " + (state.sortDir > 0 ? "ascending" : "descending");
    }
    sortLabel.textContent = text;
    sortReset.hidden = state.sortKey === DEFAULT_SORT.key && state.sortDir === DEFAULT_SORT.dir;
  }

  function renderHead() {
    describeSort();
    var row = el("tr");
    columns.forEach(function (column) {
      var th = el("th");
      th.scope = "col";
      if (column.key === state.sortKey) {
        th.setAttribute("aria-sort", state.sortDir > 0 ? "ascending" : "descending");
      }
      var button = el("button", null, column.label);
      button.type = "button";
      button.dataset.key = column.key;
      button.addEventListener("click", function () {
        if (state.sortKey === column.key) {
          state.sortDir = -state.sortDir;
        } else {
          state.sortKey = column.key;
          state.sortDir = column.evaluator ? -1 : 1;
        }
        state.page = 0;
        renderHead();
        apply();
        var again = thead.querySelector('button[data-key="' + CSS.escape(column.key) + '"]');
        if (again) again.focus();
      });
      th.appendChild(button);
      row.appendChild(th);
    });
    thead.replaceChildren(row);
  }

  // --- filtering, paging, rows ---------------------------------------------------------

  function apply() {
    var needle = state.filter.trim().toLowerCase();
    var rows = [];
    for (var i = 0; i < entries.length; i++) {
      if (state.status && entries[i].status !== state.status) continue;
      if (needle && searchable(i).indexOf(needle) < 0) continue;
      rows.push(i);
    }
    rows.sort(compareRows);
    state.rows = rows;
    var pages = Math.max(1, Math.ceil(rows.length / state.pageSize));
    state.page = Math.min(state.page, pages - 1);
    renderBody(pages);
  }

  function scoreCell(index, name) {
    var evaluation = byEvaluator[index][name];
    var td = el("td", "score");
    if (!evaluation) {
      td.className = "na";
      td.textContent = "·";
      td.title = name + " was not applied to this entry";
      return td;
    }
    if (evaluation.error) {
      td.className = "score err";
      td.textContent = "error";
      td.title = evaluation.error.type + ": " + evaluation.error.message;
    } else if (evaluation.skipped) {
      td.className = "score skip";
      td.textContent = "skipped";
      td.title = evaluation.reasoning;
    } else if (evaluation.score === null || evaluation.score === undefined) {
      td.className = "score label";  // a label and no score: neither a pass nor a failure
      td.textContent = evaluation.label;
      td.title = evaluation.reasoning;
    } else {
      td.textContent = formatScore(evaluation.score);
      td.style.backgroundColor = scoreColour(evaluation.score);
      td.title = evaluation.label ? evaluation.label + ": " + evaluation.reasoning : evaluation.reasoning;
    }
    var entry = entries[index];
    if (hasBaseline && entry.in_baseline && own(entry.baseline_scores, name)) {
      var base = entry.baseline_scores[name];
      var delta = el("span", "delta");
      if (base === null || evaluation.score === null) {
        delta.textContent = "(was " + formatScore(base) + ")";
        delta.className = "delta same";
      } else {
        var change = evaluation.score - base;
        delta.textContent = (change > 0 ? "+" : change < 0 ? "−" : "±") + Math.abs(change).toFixed(2);
        delta.className = "delta " + (change > 0 ? "up" : change < 0 ? "down" : "same");
        delta.title = "baseline " + formatScore(base);
      }
      td.appendChild(delta);
    } else if (hasBaseline) {
      td.appendChild(el("span", "delta same", "new"));  // no such entry or evaluation before
    }
    return td;
  }

  function formatCost(amount) {
    var shown = amount < 1 ? String(Number(amount.toPrecision(4))) : amount.toFixed(2);
    return DATA.currency === "USD" ? "$" + shown : shown + " " + DATA.currency;
  }

  function costCell(entry) {
    var td = el("td", "score");
    var tokens = entry.tokens.toLocaleString("en") + " tokens in " + entry.model_calls +
      " model call" + (entry.model_calls === 1 ? "" : "s");
    if (!entry.model_calls) {
      td.className = "na";
      td.textContent = "·";
      td.title = "the app called no model";
    } else if (entry.cost === null) {
      td.textContent = "unknown";
      td.title = tokens + "; cost unknown (no price table, or a model without a price)";
    } else {
      td.textContent = formatCost(entry.cost);
      td.title = tokens;
    }
    return td;
  }

  function renderBody(pages) {
    var start = state.page * state.pageSize;
    var slice = state.rows.slice(start, start + state.pageSize);
    var fragment = document.createDocumentFragment();
    slice.forEach(function (index) {
      var entry = entries[index];
      var tr = el("tr");
      tr.tabIndex = 0;
      tr.dataset.index = String(index);
      tr.setAttribute("aria-label", "entry " + entry.name + ", " + entry.status);
      tr.appendChild(el("td", null, entry.index));
      var name = el("td", "name", entry.name);
      if (entry.description) name.title = entry.description;
      tr.appendChild(name);
      var status = el("td");
      status.appendChild(el("span", "badge st-" + entry.status, entry.status));
      if (hasBaseline && entry.baseline_status && entry.baseline_status !== entry.status) {
        status.appendChild(el("span", "delta same", "was " + entry.baseline_status));
      }
      tr.appendChild(status);
      tr.appendChild(el("td", "score", formatSeconds(entry.duration_s)));
      evaluators.forEach(function (evaluator) {
        tr.appendChild(scoreCell(index, evaluator));
      });
      if (hasSpend) tr.appendChild(costCell(entry));
      fragment.appendChild(tr);
    });
    tbody.replaceChildren(fragment);
    var shown = state.rows.length;
    var text = shown ? (start + 1) + "–" + (start + slice.length) + " of " + shown.toLocaleString("en") + " entries"
                     : "no entry matches";
    if (shown !== entries.length) text += " (filtered from " + entries.length.toLocaleString("en") + ")";
    countLabel.textContent = text;
    pageLabel.textContent = "page " + (state.page + 1) + " of " + pages;
    prevButton.disabled = state.page === 0;
    nextButton.disabled = state.page >= pages - 1;
  }

  // --- detail view ---------------------------------------------------------------------

  function section(title, node) {
    var wrap = el("section");
    wrap.appendChild(el("h3", null, title));
    wrap.appendChild(node);
    return wrap;
  }

  function block(value, className) {
    return el("pre", className, asText(value));
  }

  function namedList(items) {
    var wrap = el("div");
    items.forEach(function (item) {
      var line = el("div", "kv");
      line.appendChild(el("b", null, item.name));
      line.appendChild(block(item.value));
      wrap.appendChild(line);
    });
    return wrap;
  }

  function runsStrip(runs, score) {
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "-6 0 232 26");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "scores of the repeated runs");
    var track = document.createElementNS(SVG, "line");
    track.setAttribute("class", "track");
    track.setAttribute("x1", "0");
    track.setAttribute("x2", "220");
    track.setAttribute("y1", "13");
    track.setAttribute("y2", "13");
    svg.appendChild(track);
    runs.forEach(function (run) {
      if (run.score === null) return;
      var dot = document.createElementNS(SVG, "circle");
      dot.setAttribute("cx", String(run.score * 220));
      dot.setAttribute("cy", "13");
      dot.setAttribute("r", "4");
      var title = document.createElementNS(SVG, "title");
      title.textContent = "run " + (run.index + 1) + ": " + run.score;
      dot.appendChild(title);
      svg.appendChild(dot);
    });
    if (score !== null) {
      var agg = document.createElementNS(SVG, "circle");
      agg.setAttribute("class", "agg");
      agg.setAttribute("cx", String(score * 220));
      agg.setAttribute("cy", "13");
      agg.setAttribute("r", "3");
      svg.appendChild(agg);
    }
    var wrap = el("div", "runs");
    wrap.appendChild(svg);
    var list = el("ol");
    runs.forEach(function (run) {
      var text = run.status === "scored" ? formatScore(run.score) : run.status;
      if (run.error) text += " (" + run.error.type + ": " + run.error.message + ")";
      list.appendChild(el("li", null, text + (run.reasoning ? " — " + run.reasoning : "")));
    });
    wrap.appendChild(list);
    return wrap;
  }

  function evaluationsTable(entry) {
    var table = el("table", "plain evaluations");
    var head = el("tr");
    ["evaluator", "score"].concat(hasBaseline ? ["baseline"] : [], ["status", "reasoning or error"])
      .forEach(function (label) { head.appendChild(el("th", null, label)); });
    var thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    var body = el("tbody");
    entry.evaluations.forEach(function (evaluation) {
      var tr = el("tr");
      tr.appendChild(el("th", null, evaluation.evaluator));
      var unscored = evaluation.score === null || evaluation.score === undefined;
      var shown = evaluation.label ? (unscored ? evaluation.label : formatScore(evaluation.score) + " · " + evaluation.label) : formatScore(evaluation.score);
      var score = el("td", "score", shown);
      if (!unscored) score.style.backgroundColor = scoreColour(evaluation.score);
      tr.appendChild(score);
      if (hasBaseline) {
        var known = entry.in_baseline && own(entry.baseline_scores, evaluation.evaluator);
        tr.appendChild(el("td", null, known ? formatScore(entry.baseline_scores[evaluation.evaluator]) : "—"));
      }
      var passed = evaluation.score !== null && evaluation.score >= threshold;
      tr.appendChild(el("td", null, evaluation.error ? "errored" : evaluation.skipped ? "skipped" : unscored ? "labelled" : passed ? "passed" : "failed"));
      var why = el("td");
      if (evaluation.error) {
        why.appendChild(el("div", "error-text", evaluation.error.type + ": " + evaluation.error.message
          + (evaluation.error.where ? " (in " + evaluation.error.where + ")" : "")));
      } else {
        why.appendChild(el("div", "reasoning", evaluation.reasoning));
      }
      var details = evaluation.details;
      if (details && Array.isArray(details.runs) && typeof details.num_judges === "number") {
        why.appendChild(runsStrip(details.runs, evaluation.score));
      }
      if (details && Object.keys(details).length) {
        var more = el("details");
        more.appendChild(el("summary", null, "details"));
        more.appendChild(block(details));
        why.appendChild(more);
      }
      tr.appendChild(why);
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }

  function spanNode(span, depth) {
    var node = el("details", span.status === "error" ? "span-error" : null);
    node.open = depth < 2;
    var summary = el("summary");
    [
      el("b", null, span.name),
      el("span", "kind", span.kind),
      el("span", "ms", span.duration_ms.toFixed(1) + " ms"),
      el("span", "ms", "at +" + span.start_ms.toFixed(1) + " ms")
    ].concat(span.status === "error" ? [el("span", "error-text", "error")] : [])
      .forEach(function (part, position) {
        if (position) summary.appendChild(document.createTextNode(" "));
        summary.appendChild(part);
      });
    node.appendChild(summary);
    if (span.error) node.appendChild(el("div", "error-text", span.error));
    if (span.model) {
      var tokens = span.input_tokens !== null || span.output_tokens !== null
        ? " · tokens in " + (span.input_tokens === null ? "?" : span.input_tokens)
          + ", out " + (span.output_tokens === null ? "?" : span.output_tokens)
        : "";
      node.appendChild(el("div", "kv", "model " + span.model + tokens));
    }
    span.messages.forEach(function (message) {
      var box = el("div", "message " + message.direction);
      box.appendChild(el("div", "role", (message.direction === "in" ? "→ " : "← ") + message.role));
      if (message.content !== null) box.appendChild(el("div", "content", message.content));
      message.tool_calls.forEach(function (call) {
        box.appendChild(el("code", null, "tool call " + call));
      });
      node.appendChild(box);
    });
    if (span.input !== null && !span.messages.length) {
      node.appendChild(el("div", "kv", "input"));
      node.appendChild(block(span.input));
    }
    if (span.output !== null && !span.messages.length) {
      node.appendChild(el("div", "kv", "output"));
      node.appendChild(block(span.output));
    }
    span.values.forEach(function (value) {
      node.appendChild(el("div", "kv", "wrap " + value.purpose + " " + value.name));
      node.appendChild(block(value.value));
    });
    span.children.forEach(function (child) {
      node.appendChild(spanNode(child, depth + 1));
    });
    return node;
  }

  function countSpans(spans) {
    return spans.reduce(function (total, span) { return total + 1 + countSpans(span.children); }, 0);
  }

  function traceView(entry) {
    var wrap = el("div", "trace");
    wrap.id = "detail-trace";
    if (entry.trace_problem) wrap.appendChild(el("p", "error-text", entry.trace_problem));
    if (!entry.trace.length) {
      if (!entry.trace_problem) wrap.appendChild(el("p", "muted", "No trace was stored for this entry."));
      return wrap;
    }
    var spans = countSpans(entry.trace);
    if (spans > TRACE_SPANS) {
      // A trace this large is drawn when asked for: opening the entry stays quick.
      var show = el("button", "show-trace", "Show the trace (" + spans.toLocaleString("en") + " spans)");
      show.type = "button";
      show.addEventListener("click", function () {
        var drawn = document.createDocumentFragment();
        entry.trace.forEach(function (span) { drawn.appendChild(spanNode(span, 0)); });
        show.replaceWith(drawn);
      });
      wrap.appendChild(show);
      return wrap;
    }
    entry.trace.forEach(function (span) {
      wrap.appendChild(spanNode(span, 0));
    });
    return wrap;
  }

  function openDetail(index) {
    var entry = full(index);
    state.opened = index;
    detailTitle.textContent = "#" + entry.index + " " + entry.name;
    var body = document.createDocumentFragment();
    var head = el("p");
    head.appendChild(el("span", "badge st-" + entry.status, entry.status));
    head.appendChild(document.createTextNode(" " + formatSeconds(entry.duration_s)
      + (entry.description ? " · " + entry.description : "")));
    if (hasBaseline) {
      head.appendChild(el("span", "muted", entry.in_baseline ? " · baseline " + entry.baseline_status : " · not in the baseline"));
    }
    body.appendChild(head);
    if (entry.error) {
      body.appendChild(section("Run error", el("pre", "error-text",
        entry.error.type + ": " + entry.error.message + (entry.error.where ? " (in " + entry.error.where + ")" : ""))));
    }
    body.appendChild(section("Input", block(entry.input, "d-input")));
    if (entry.eval_input.length) body.appendChild(section("Named inputs", namedList(entry.eval_input)));
    body.appendChild(section("Output", block(entry.output, "d-output")));
    if (entry.eval_output && entry.eval_output.length) {
      body.appendChild(section("Named outputs", namedList(entry.eval_output)));
    }
    body.appendChild(section("Expectation", entry.has_expectation
      ? block(entry.expectation, "d-expectation") : el("p", "muted", "none given")));
    body.appendChild(section("Metadata", entry.metadata && Object.keys(entry.metadata).length
      ? block(entry.metadata, "d-metadata") : el("p", "muted", "none")));
    body.appendChild(section("Evaluations", entry.evaluations.length
      ? evaluationsTable(entry) : el("p", "muted", "no evaluator ran")));
    body.appendChild(section("Trace", traceView(entry)));
    detailBody.replaceChildren(body);
    dialog.showModal();
    detailBody.scrollTop = 0;
  }

  dialog.addEventListener("close", function () {
    var index = state.opened;
    state.opened = null;
    var row = tbody.querySelector('tr[data-index="' + index + '"]');
    if (row) row.focus();
  });
  document.getElementById("detail-close").addEventListener("click", function () {
    dialog.close();
  });

  // --- events --------------------------------------------------------------------------

  var failing = document.getElementById("failing");
  if (failing) {
    failing.addEventListener("click", function (event) {
      var button = event.target.closest("button.open-entry");
      if (button) openDetail(Number(button.dataset.index));
    });
  }
  tbody.addEventListener("click", function (event) {
    var row = event.target.closest("tr");
    if (row) openDetail(Number(row.dataset.index));
  });
  tbody.addEventListener("keydown", function (event) {
    var row = event.target.closest("tr");
    if (!row) return;
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      openDetail(Number(row.dataset.index));
    } else if (event.key === "ArrowDown" && row.nextElementSibling) {
      event.preventDefault();
      row.nextElementSibling.focus();
    } else if (event.key === "ArrowUp" && row.previousElementSibling) {
      event.preventDefault();
      row.previousElementSibling.focus();
    }
  });
  filterInput.addEventListener("input", function () {
    state.filter = filterInput.value;
    state.page = 0;
    apply();
  });
  statusSelect.addEventListener("change", function () {
    state.status = statusSelect.value;
    state.page = 0;
    apply();
  });
  pageSizeSelect.addEventListener("change", function () {
    state.pageSize = Number(pageSizeSelect.value);
    state.page = 0;
    apply();
  });
  sortReset.addEventListener("click", function () {
    state.sortKey = DEFAULT_SORT.key;
    state.sortDir = DEFAULT_SORT.dir;
    state.page = 0;
    renderHead();
    apply();
  });
  prevButton.addEventListener("click", function () {
    state.page -= 1;
    apply();
  });
  nextButton.addEventListener("click", function () {
    state.page += 1;
    apply();
  });

  renderHead();
  apply();
  document.documentElement.setAttribute("data-rendered-ms", performance.now().toFixed(1));
})();
