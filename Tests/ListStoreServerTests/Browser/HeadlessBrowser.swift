import Foundation
import ListStoreTesting
import PostgresTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

extension Trait where Self == ConditionTrait {
  /// Runs the suite where Debian's `chromium` is installed, and skips it elsewhere with one
  /// line naming the package; with `LISTSTORE_REQUIRE_ALL=1` (set in CI, which installs
  /// it) it runs anyway, and fails when the browser is missing.
  static var browser: Self {
    let reason = "chromium is not installed: the browser tests need it (apt-get install chromium)"
    return .enabled(
      if: Prerequisites.check(HeadlessBrowser.executable != nil, reason: reason),
      Comment(rawValue: reason))
  }
}

/// Chromium without a window, driven through the DevTools protocol over
/// `--remote-debugging-pipe`: JSON messages, each ended by a NUL byte, written to the
/// browser's file descriptor 3 and read from its descriptor 4 — no WebSocket needed.
final class HeadlessBrowser: @unchecked Sendable {
  // `@unchecked Sendable`: `responses` and `nextID` are touched under `condition` only; the
  // descriptors and the process id are set once in `init`.
  private let condition = NSCondition()
  private var responses: [Int: [String: Any]] = [:]
  private var nextID = 0
  private var closed = false
  /// The events kept (`watch(_:)`), oldest first, and the methods to keep.
  private var events: [(method: String, session: String?, params: [String: Any])] = []
  private var watched: Set<String> = []
  private let input: Int32
  private let output: Int32
  private let pid: pid_t
  private let profile: String

  /// The browser's program: `$LISTSTORE_CHROMIUM`, else Debian's `chromium`.
  static var executable: String? {
    if let path = ProcessInfo.processInfo.environment["LISTSTORE_CHROMIUM"] { return path }
    return ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }

  /// Starts the browser.
  init() throws {
    guard let executable = Self.executable else {
      throw BrowserError("chromium is not installed (apt-get install chromium)")
    }
    profile = NSTemporaryDirectory() + "liststore-chromium-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
    var toBrowser: [Int32] = [0, 0]
    var fromBrowser: [Int32] = [0, 0]
    guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else {
      throw BrowserError("pipe: \(String(cString: strerror(errno)))")
    }
    // Only the browser's copies (dup2'd to 3 and 4) cross into it.
    for descriptor in toBrowser + fromBrowser { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, toBrowser[0], 3)
    posix_spawn_file_actions_adddup2(&actions, fromBrowser[1], 4)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    // Nothing else of this process crosses into the browser: other tests' pipes to their
    // own children, left open in a browser that lives for the whole suite, would keep
    // those children's readers from ever seeing the end of their output. glibc 2.34's
    // closefrom action, found at run time (its declaration needs _GNU_SOURCE).
    if let process = dlopen(nil, RTLD_NOW),
      let symbol = dlsym(process, "posix_spawn_file_actions_addclosefrom_np")
    {
      typealias CloseFrom =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32)
        -> Int32
      _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 5)
    }
    let arguments = [
      executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--no-first-run", "--no-default-browser-check", "--remote-debugging-pipe",
      "--user-data-dir=\(profile)", "--window-size=1280,900", "about:blank",
    ]
    var argv = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, nil, &argv, environ)
    Glibc.close(toBrowser[0])
    Glibc.close(fromBrowser[1])
    guard spawned == 0 else {
      Glibc.close(toBrowser[1])
      Glibc.close(fromBrowser[0])
      throw BrowserError("cannot start \(executable): \(String(cString: strerror(spawned)))")
    }
    self.pid = pid
    input = toBrowser[1]
    output = fromBrowser[0]
    Thread.detachNewThread { [self] in readMessages() }
  }

  deinit {
    close()
  }

  /// Ends the browser and removes its profile.
  func close() {
    condition.lock()
    let wasClosed = closed
    closed = true
    condition.unlock()
    guard !wasClosed else { return }
    Glibc.close(input)
    kill(pid, SIGKILL)
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    Glibc.close(output)
    try? FileManager.default.removeItem(atPath: profile)
  }

  /// Sends a command and waits for its result (the `result` object), for at most
  /// `timeout` seconds (a bound for a test that would otherwise hang).
  @discardableResult
  func send(
    _ method: String, _ params: [String: Any] = [:], session: String? = nil,
    timeout: TimeInterval = TestLimits.eventSeconds
  ) throws -> [String: Any] {
    condition.lock()
    nextID += 1
    let id = nextID
    condition.unlock()
    var message: [String: Any] = ["id": id, "method": method, "params": params]
    if let session { message["sessionId"] = session }
    var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
    bytes.append(0)
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeBytes { buffer in
        buffer.baseAddress.map { write(input, $0 + offset, bytes.count - offset) } ?? -1
      }
      guard written > 0 else { throw BrowserError("the browser's pipe closed") }
      offset += written
    }
    let deadline = Date().addingTimeInterval(timeout)
    condition.lock()
    defer { condition.unlock() }
    while responses[id] == nil {
      if closed || !condition.wait(until: deadline) {
        throw BrowserError("no answer to \(method) within \(timeout) s")
      }
    }
    let response = responses.removeValue(forKey: id) ?? [:]
    if let error = response["error"] as? [String: Any] {
      throw BrowserError("\(method): \(error["message"] ?? error)")
    }
    return response["result"] as? [String: Any] ?? [:]
  }

  /// Keeps the events named `method` from now on, for ``nextEvent(_:session:timeout:)``.
  func watch(_ method: String) {
    condition.lock()
    watched.insert(method)
    condition.unlock()
  }

  /// Waits for the oldest kept event `method` of `session` (at most `timeout` seconds),
  /// removes it and returns its parameters.
  func nextEvent(
    _ method: String, session: String?, timeout: TimeInterval = TestLimits.eventSeconds
  ) throws -> [String: Any] {
    let deadline = Date().addingTimeInterval(timeout)
    condition.lock()
    defer { condition.unlock() }
    while true {
      if let index = events.firstIndex(where: { $0.method == method && $0.session == session }) {
        return events.remove(at: index).params
      }
      if closed || !condition.wait(until: deadline) {
        throw BrowserError("no \(method) within \(timeout) s")
      }
    }
  }

  /// A new tab, attached to.
  func newPage() throws -> BrowserPage {
    let target = try send("Target.createTarget", ["url": "about:blank"])
    guard let targetID = target["targetId"] as? String else {
      throw BrowserError("no target id in \(target)")
    }
    let attached = try send("Target.attachToTarget", ["targetId": targetID, "flatten": true])
    guard let session = attached["sessionId"] as? String else {
      throw BrowserError("no session id in \(attached)")
    }
    let page = BrowserPage(browser: self, session: session)
    try page.send("Page.enable")
    try page.send("Runtime.enable")
    return page
  }

  private func readMessages() {
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      pending += chunk[..<count]
      while let end = pending.firstIndex(of: 0) {
        let message = Array(pending[..<end])
        pending.removeSubrange(...end)
        guard let object = try? JSONSerialization.jsonObject(with: Data(message)) as? [String: Any]
        else { continue }
        condition.lock()
        if let id = object["id"] as? Int {
          responses[id] = object
        } else if let method = object["method"] as? String, watched.contains(method) {
          events.append(
            (method, object["sessionId"] as? String, object["params"] as? [String: Any] ?? [:]))
        }
        condition.broadcast()
        condition.unlock()
      }
    }
    condition.lock()
    closed = true
    condition.broadcast()
    condition.unlock()
  }
}

/// One tab of a ``HeadlessBrowser``.
struct BrowserPage {
  let browser: HeadlessBrowser
  let session: String

  @discardableResult
  func send(
    _ method: String, _ params: [String: Any] = [:], timeout: TimeInterval = TestLimits.eventSeconds
  ) throws -> [String: Any] {
    try browser.send(method, params, session: session, timeout: timeout)
  }

  /// Opens `url` and waits for its document to have loaded.
  func open(_ url: String) throws {
    try send("Page.navigate", ["url": url])
    try waitFor("document.readyState === 'complete' && location.href !== 'about:blank'")
  }

  /// The value of a JavaScript expression (awaited when it is a promise).
  @discardableResult
  func evaluate(_ expression: String, timeout: TimeInterval = TestLimits.eventSeconds) throws
    -> Any?
  {
    let result = try send(
      "Runtime.evaluate",
      ["expression": expression, "awaitPromise": true, "returnByValue": true], timeout: timeout)
    if let exception = result["exceptionDetails"] as? [String: Any] {
      throw BrowserError("the page threw: \(exception)")
    }
    return (result["result"] as? [String: Any])?["value"]
  }

  /// Waits until a JavaScript condition holds: checked at once and again after every
  /// change of the document (a MutationObserver), of its loading state (a page whose
  /// script changes nothing once it has loaded) and of the focus, not on a timer.
  func waitFor(_ condition: String, timeout: TimeInterval = TestLimits.eventSeconds) throws {
    let script = """
      new Promise(resolve => {
        const holds = () => { try { return !!(\(condition)); } catch (_) { return false; } };
        if (holds()) return resolve(true);
        const check = () => {
          if (!holds()) return;
          observer.disconnect();
          document.removeEventListener("readystatechange", check);
          document.removeEventListener("focusin", check);
          resolve(true);
        };
        const observer = new MutationObserver(check);
        observer.observe(document, { subtree: true, childList: true, characterData: true,
          attributes: true });
        document.addEventListener("readystatechange", check);
        document.addEventListener("focusin", check);
      })
      """
    do {
      try evaluate(script, timeout: timeout)
    } catch {
      let state = (try? evaluate("document.body ? document.body.innerText : ''", timeout: 5)) ?? ""
      throw BrowserError("waited for \(condition): \(error); the page shows:\n\(state)")
    }
  }

  /// Presses a key: `Tab`, `Enter`, `Escape`, `Backspace`, with `shift` for Shift-Tab.
  func press(_ key: String, shift: Bool = false) throws {
    let codes = ["Tab": 9, "Enter": 13, "Escape": 27, "Backspace": 8]
    var down: [String: Any] = [
      "type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": codes[key] ?? 0,
      "modifiers": shift ? 8 : 0,
    ]
    if key == "Enter" { down["text"] = "\r" }
    try send("Input.dispatchKeyEvent", down)
    down["type"] = "keyUp"
    down["text"] = nil
    try send("Input.dispatchKeyEvent", down)
  }

  /// Types text into what has the focus.
  func type(_ text: String) throws {
    try send("Input.insertText", ["text": text])
  }

  /// The `data-key` of the focused element.
  func focusedKey() throws -> String? {
    try evaluate("document.activeElement && document.activeElement.dataset.key || null") as? String
  }

  /// Opens the in-place editor of the button with `data-key` `key` with the keyboard
  /// alone: Tab to it, Enter, and waits for the field to have the focus.
  func openEditor(_ key: String) throws {
    try tab(to: key)
    try press("Enter")
    try waitFor("document.activeElement.tagName === 'INPUT'")
  }

  /// Edits in place with the keyboard alone: opens the editor of `key`, types `text`
  /// after what the field holds, and saves with Enter.
  func editInPlace(_ key: String, typing text: String) throws {
    try openEditor(key)
    try type(text)
    try press("Enter")
  }

  /// Presses Tab until the element with `data-key` `key` has the focus; fails past `limit`.
  func tab(to key: String, limit: Int = 80) throws {
    for _ in 0..<limit {
      if try focusedKey() == key { return }
      try press("Tab")
    }
    throw BrowserError("\(limit) presses of Tab never reached \(key)")
  }

  /// Drags the element `from` (a CSS selector) onto the middle of `to` with the mouse:
  /// presses the left button on its middle and moves, so that the page's own `dragstart`
  /// runs and fills the drag's data; the browser hands that data to the test (drag
  /// interception) and the test has it enter, hover over and drop on the target, one
  /// command each, answered once the page has handled it — where the browser's own drag
  /// loses moves that come while the page is still busy with an earlier one.
  func drag(from: String, to: String) throws {
    func center(_ selector: String) throws -> (x: Int, y: Int) {
      let quoted = String(
        decoding: try JSONSerialization.data(withJSONObject: selector, options: .fragmentsAllowed),
        as: UTF8.self)
      let point =
        try evaluate(
          """
          (() => { const box = document.querySelector(\(quoted)).getBoundingClientRect();
            return [Math.round(box.left + box.width / 2), Math.round(box.top + box.height / 2)];
          })()
          """) as? [Int]
      guard let point, point.count == 2 else { throw BrowserError("no element \(selector)") }
      return (point[0], point[1])
    }
    let start = try center(from)
    let end = try center(to)
    func mouse(_ type: String, _ point: (x: Int, y: Int)) throws {
      try send(
        "Input.dispatchMouseEvent",
        [
          "type": type, "x": point.x, "y": point.y, "button": "left",
          "buttons": type == "mouseReleased" ? 0 : 1, "clickCount": 1,
        ])
    }
    browser.watch("Input.dragIntercepted")
    try send("Input.setInterceptDrags", ["enabled": true])
    defer { _ = try? send("Input.setInterceptDrags", ["enabled": false]) }
    try send("Input.dispatchMouseEvent", ["type": "mouseMoved", "x": start.x, "y": start.y])
    try mouse("mousePressed", start)
    // Past the few pixels after which a press becomes a drag.
    try mouse("mouseMoved", (start.x + 10, start.y + 10))
    let data = try browser.nextEvent("Input.dragIntercepted", session: session)["data"] ?? [:]
    for type in ["dragEnter", "dragOver", "drop"] {
      try send(
        "Input.dispatchDragEvent", ["type": type, "x": end.x, "y": end.y, "data": data])
    }
    try mouse("mouseReleased", end)
  }

  /// Sets the viewport: `mobile` for a phone's (touch, device pixels).
  func setViewport(width: Int, height: Int, mobile: Bool) throws {
    try send(
      "Emulation.setDeviceMetricsOverride",
      ["width": width, "height": height, "deviceScaleFactor": mobile ? 3 : 1, "mobile": mobile])
  }

  /// A PNG of the page as shown.
  func screenshot() throws -> Data {
    let result = try send("Page.captureScreenshot", ["format": "png"])
    guard let text = result["data"] as? String, let data = Data(base64Encoded: text) else {
      throw BrowserError("no screenshot data")
    }
    return data
  }
}

struct BrowserError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}
