// mnote-evidence: the search box's worker. It runs the vendored sql.js-httpvfs worker unmodified and gives
// it one kind of request it cannot make itself: a read that spans index files. The engine reads ahead (one
// request for several pages) and, in its "chunked" mode, asks the file holding the first page for the whole
// span, so a span past a file's end comes back short and the engine fails ("doXHR failed (bug)!"). Here a
// ranged GET of `…db.NNN` is read from as many files as the span covers (`?file=` is the manifest's bytes per
// file), and a host that ignores `Range` (200, the whole file) is cut to the span asked for.
// Invariant: the engine receives exactly the bytes [from, to] of the database, whatever the host does with
// ranges; every other request goes out as the engine made it.
(function () {
  "use strict";
  var FILE = Number(new URLSearchParams(self.location.search).get("file"));
  var INDEX_FILE = /^(.*db\.)(\d+)(\?[^#]*)?$/;
  var RANGE = /^bytes=(\d+)-(\d+)$/;
  var Native = self.XMLHttpRequest;

  // Bytes [from, to] of one index file (synchronous: the engine reads inside SQLite's VFS callbacks).
  function part(url, from, to) {
    var xhr = new Native();
    xhr.open("GET", url, false);
    xhr.responseType = "arraybuffer";
    xhr.setRequestHeader("Range", "bytes=" + from + "-" + to);
    xhr.send(null);
    if (xhr.status === 206) return new Uint8Array(xhr.response);
    if (xhr.status === 200) return new Uint8Array(xhr.response).subarray(from, to + 1);
    throw new Error("Couldn't load " + url + ". Status: " + xhr.status);
  }

  function SpanningRequest() {
    this._native = new Native();
    this._range = null;
    this.responseType = "";
    this.status = 0;
    this.response = null;
  }
  SpanningRequest.prototype.open = function (method, url, async) {
    this._method = method;
    this._url = url;
    this._native.open(method, url, async);
  };
  SpanningRequest.prototype.setRequestHeader = function (name, value) {
    if (name.toLowerCase() === "range") this._range = value;
    else this._native.setRequestHeader(name, value);
  };
  SpanningRequest.prototype.overrideMimeType = function (type) { this._native.overrideMimeType(type); };
  SpanningRequest.prototype.getResponseHeader = function (name) { return this._native.getResponseHeader(name); };
  SpanningRequest.prototype.getAllResponseHeaders = function () { return this._native.getAllResponseHeaders(); };
  SpanningRequest.prototype.send = function (body) {
    var range = this._range && RANGE.exec(this._range), file = INDEX_FILE.exec(this._url);
    if (this._method !== "GET" || !range || !file || !(FILE > 0)) {
      if (this._range) this._native.setRequestHeader("Range", this._range);
      this._native.responseType = this.responseType;
      this._native.send(body);
      this.status = this._native.status;
      this.response = this._native.response;
      return;
    }
    var from = Number(range[1]), to = Number(range[2]), n = parseInt(file[2], 10), digits = file[2].length;
    var parts = [], total = 0;
    while (to >= 0) {  // from: in file n; to: counted from file n's start, past its end when the span goes on
      var end = Math.min(to, FILE - 1);
      var bytes = part(file[1] + String(n).padStart(digits, "0") + (file[3] || ""), from, end);
      parts.push(bytes);
      total += bytes.length;
      if (bytes.length < end - from + 1) break;  // the database's end
      to -= FILE;
      from = 0;
      n += 1;
    }
    var out = new Uint8Array(total), at = 0;
    parts.forEach(function (p) { out.set(p, at); at += p.length; });
    this.status = 206;
    this.response = out.buffer;
  };
  self.XMLHttpRequest = SpanningRequest;
  importScripts("vendor/sql.js-httpvfs/sqlite.worker.js");
})();
