import Foundation
import Testing

@testable import ListStoreCLI

@Suite struct KeyDecoderTests {
  static let esc: UInt8 = 0x1B

  @Test(arguments: [
    ("\u{1B}[A", Key.up), ("\u{1B}[B", .down), ("\u{1B}[C", .right), ("\u{1B}[D", .left),
    ("\u{1B}OA", .up), ("\u{1B}OB", .down), ("\u{1B}OC", .right), ("\u{1B}OD", .left),
    ("\u{1B}[H", .home), ("\u{1B}[F", .end), ("\u{1B}OH", .home), ("\u{1B}[1~", .home),
    ("\u{1B}[4~", .end), ("\u{1B}[2~", .insert), ("\u{1B}[3~", .delete), ("\u{1B}[5~", .pageUp),
    ("\u{1B}[6~", .pageDown), ("\u{1B}[1;5A", .up), ("\r", .enter), ("\n", .enter), ("\t", .tab),
    ("\u{7F}", .backspace), ("\u{03}", .control("c")), ("\u{0C}", .control("l")),
    ("\u{1C}", .control("\\")), ("+", .character("+")), (" ", .character(" ")),
    ("é", .character("é")), ("数", .character("数")), ("🙂", .character("🙂")),
    ("\u{1B}[99~", .unknown(Array("\u{1B}[99~".utf8))), ("\u{1B}OZ", .unknown([esc, 0x4F, 0x5A])),
  ])
  func decodesOneKey(bytes: String, key: Key) {
    var decoder = KeyDecoder()
    #expect(decoder.decode(Array(bytes.utf8)) == [key])
    #expect(!decoder.hasPending)
  }

  @Test func decodesSeveralKeysInOneRead() {
    var decoder = KeyDecoder()
    #expect(
      decoder.decode(Array("aa++\u{1B}[B-d\u{1B}OAq".utf8)) == [
        .character("a"), .character("a"), .character("+"), .character("+"), .down,
        .character("-"), .character("d"), .up, .character("q"),
      ])
  }

  @Test func keepsSequencesSplitAcrossReads() {
    let bytes = Array("x\u{1B}[5~é\u{1B}OC".utf8)
    // Every way of cutting the bytes in two gives the same keys.
    for cut in 0...bytes.count {
      var decoder = KeyDecoder()
      let keys = decoder.decode(bytes[..<cut]) + decoder.decode(bytes[cut...])
      #expect(keys == [.character("x"), .pageUp, .character("é"), .right], "cut at \(cut)")
      #expect(!decoder.hasPending)
    }
  }

  @Test func aLoneEscapeIsEscapeOnceFlushed() {
    var decoder = KeyDecoder()
    #expect(decoder.decode([Self.esc]) == [])
    #expect(decoder.hasPending)
    #expect(decoder.flush() == [.escape])
    #expect(!decoder.hasPending)
    #expect(decoder.decode([Self.esc, Self.esc, 0x61]) == [.escape, .escape, .character("a")])
    #expect(decoder.decode([Self.esc, 0x5B, 0x31]) == [])
    #expect(decoder.flush() == [.escape, .character("["), .character("1")])
  }

  @Test func malformedBytesBecomeUnknownKeys() {
    var decoder = KeyDecoder()
    #expect(decoder.decode([0xFF, 0x80]) == [.unknown([0xFF]), .unknown([0x80])])
    #expect(decoder.decode([0xC3, 0x28]) == [.unknown([0xC3, 0x28])])
    #expect(decoder.decode([0xE6, 0x95]) == [])
    #expect(decoder.flush() == [.unknown([0xE6, 0x95])])
  }
}

@Suite struct ScreenTests {
  /// A screen whose output the test reads.
  final class Capture {
    var written: [String] = []
    lazy var screen = Screen(size: TerminalSize(rows: 5, columns: 20)) { [unowned self] in
      self.written.append($0)
    }
  }

  static let clear = "\u{1B}[H\u{1B}[2J"
  static let eol = "\u{1B}[K"

  @Test func firstFrameClearsAndDrawsEveryNonEmptyLine() {
    let capture = Capture()
    capture.screen.render(["Title", "", "row"])
    #expect(
      capture.written == [
        Self.clear + "\u{1B}[1;1HTitle" + Self.eol + "\u{1B}[3;1Hrow" + Self.eol
      ])
  }

  @Test func laterFramesRewriteOnlyTheLinesThatChanged() {
    let capture = Capture()
    capture.screen.render(["Title", "a", "b", "c"])
    capture.written = []
    capture.screen.render(["Title", "a", "B", "c"])
    #expect(capture.written == ["\u{1B}[3;1HB" + Self.eol])
    capture.screen.render(["Title", "a", "B", "c"])
    #expect(capture.written.count == 1)  // nothing changed: nothing written
    capture.screen.render(["Title", "a"])
    #expect(
      capture.written.last == "\u{1B}[3;1H" + Self.eol + "\u{1B}[4;1H" + Self.eol)
    capture.screen.render([ScreenLine("Title"), ScreenLine("a", isHighlighted: true)])
    #expect(capture.written.last == "\u{1B}[2;1H\u{1B}[7ma\u{1B}[0m" + Self.eol)
  }

  @Test func linesAreCutToTheScreenAndMadeVisible() {
    let capture = Capture()
    capture.screen.render([
      "0123456789012345678901234", "bell\u{07}", "数数数数数数数数数数数", "4", "5", "sixth",
    ])
    let output = capture.written.joined()
    #expect(output.contains("\u{1B}[1;1H0123456789012345678" + Self.eol))  // 19 columns
    #expect(output.contains("bell\\u{7}"))
    #expect(output.contains("\u{1B}[3;1H数数数数数数数数数" + Self.eol))  // 18 of 19 columns
    #expect(output.contains("\u{1B}[5;1H5"))
    #expect(!output.contains("sixth"))
  }

  @Test func resizeAndInvalidateRedrawEverything() {
    let capture = Capture()
    capture.screen.render(["a", "b"])
    capture.screen.resize(to: TerminalSize(rows: 5, columns: 20))
    capture.screen.render(["a", "b"])
    #expect(capture.written.count == 1)  // the same size changes nothing
    capture.screen.resize(to: TerminalSize(rows: 10, columns: 40))
    capture.screen.render(["a", "b"])
    #expect(capture.written.last?.hasPrefix(Self.clear) == true)
    capture.screen.invalidate()
    capture.screen.render(["a", "b"])
    #expect(
      capture.written.last == Self.clear + "\u{1B}[1;1Ha" + Self.eol + "\u{1B}[2;1Hb" + Self.eol)
  }

  @Test func sizeFallsBackWhenTheDescriptorIsNoTerminal() throws {
    let pipe = Pipe()
    #expect(Terminal.size(of: pipe.fileHandleForReading.fileDescriptor) == .fallback)
    #expect(TerminalSize.fallback == TerminalSize(rows: 24, columns: 80))
    #expect(!Terminal.isTerminal(pipe.fileHandleForReading.fileDescriptor))
  }

  @Test func aSessionNeedsATerminal() throws {
    let pipe = Pipe()
    #expect(throws: TerminalError.self) {
      try TerminalSession(
        input: pipe.fileHandleForReading.fileDescriptor,
        output: pipe.fileHandleForWriting.fileDescriptor)
    }
  }
}

/// A pseudo-terminal: the program's side (`terminal`) and the emulator's side (`emulator`).
final class PseudoTerminal {
  let emulator: Int32
  let terminal: Int32

  init() throws {
    // posix_openpt and friends are hidden from Swift's Glibc module; look them up in libc.
    typealias OpenPT = @convention(c) (Int32) -> Int32
    typealias PTCall = @convention(c) (Int32) -> Int32
    typealias PTSName = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?
    guard let openSymbol = dlsym(nil, "posix_openpt"), let grantSymbol = dlsym(nil, "grantpt"),
      let unlockSymbol = dlsym(nil, "unlockpt"), let nameSymbol = dlsym(nil, "ptsname")
    else { throw TerminalError(description: "no pseudo-terminal functions") }
    emulator = unsafeBitCast(openSymbol, to: OpenPT.self)(O_RDWR | O_NOCTTY)
    guard emulator >= 0, unsafeBitCast(grantSymbol, to: PTCall.self)(emulator) == 0,
      unsafeBitCast(unlockSymbol, to: PTCall.self)(emulator) == 0,
      let name = unsafeBitCast(nameSymbol, to: PTSName.self)(emulator)
    else { throw TerminalError(description: "no pseudo-terminal") }
    terminal = open(name, O_RDWR | O_NOCTTY)
    guard terminal >= 0 else { throw TerminalError(description: "cannot open the terminal side") }
    _ = fcntl(emulator, F_SETFL, fcntl(emulator, F_GETFL) | O_NONBLOCK)
  }

  deinit {
    close(terminal)
    close(emulator)
  }

  /// What the program wrote so far.
  func output() -> String {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(emulator, $0.baseAddress, $0.count) }
      guard count > 0 else { break }
      bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  func attributes() -> termios {
    var attributes = termios()
    _ = tcgetattr(terminal, &attributes)
    return attributes
  }
}

@Suite struct TerminalSessionTests {
  @Test func entersRawModeAndRestoresEverything() throws {
    let pty = try PseudoTerminal()
    #expect(Terminal.isTerminal(pty.terminal))
    let before = pty.attributes()
    #expect(before.c_lflag & tcflag_t(ICANON | ECHO | ISIG) != 0)

    let session = try TerminalSession(input: pty.terminal, output: pty.terminal)
    let raw = pty.attributes()
    #expect(raw.c_lflag & tcflag_t(ICANON | ECHO | ISIG | IEXTEN) == 0)
    #expect(raw.c_iflag & tcflag_t(ICRNL | IXON) == 0)
    #expect(pty.output() == "\u{1B}[?1049h\u{1B}[?25l")

    session.restore()
    session.restore()  // a second restore does nothing
    let after = pty.attributes()
    #expect(after.c_lflag == before.c_lflag)
    #expect(after.c_iflag == before.c_iflag)
    #expect(pty.output() == "\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l")

    // Once restored, another session may start; this one keeps signal keys and the screen.
    var options = TerminalSession.Options()
    options.alternateScreen = false
    options.hideCursor = false
    options.keysSendSignals = true
    let again = try TerminalSession(input: pty.terminal, output: pty.terminal, options: options)
    #expect(pty.attributes().c_lflag & tcflag_t(ISIG) != 0)
    #expect(pty.output() == "")
    again.restore()
    #expect(pty.attributes().c_lflag == before.c_lflag)
  }

  @Test func sizeIsReadFromTheTerminal() throws {
    let pty = try PseudoTerminal()
    var size = winsize(ws_row: 30, ws_col: 100, ws_xpixel: 0, ws_ypixel: 0)
    #expect(ioctl(pty.emulator, UInt(TIOCSWINSZ), &size) == 0)
    #expect(Terminal.size(of: pty.terminal) == TerminalSize(rows: 30, columns: 100))
  }
}

@Suite struct KeyReaderTests {
  @Test func readsKeysTimesOutAndWakes() throws {
    let pipe = Pipe()
    let reader = try KeyReader(descriptor: pipe.fileHandleForReading.fileDescriptor)
    #expect(try reader.next(timeout: .milliseconds(10)) == .timedOut)
    pipe.fileHandleForWriting.write(Data("a\u{1B}[A".utf8))
    #expect(try reader.next(timeout: .seconds(1)) == .keys([.character("a"), .up]))
    reader.waker.wake()
    reader.waker.wake()
    #expect(try reader.next(timeout: .seconds(1)) == .woken)
    #expect(try reader.next(timeout: .milliseconds(10)) == .timedOut)  // wakes were merged

    // A lone ESC becomes Escape after the escape delay.
    pipe.fileHandleForWriting.write(Data([0x1B]))
    #expect(try reader.next(timeout: .seconds(1)) == .keys([.escape]))

    try pipe.fileHandleForWriting.close()
    #expect(try reader.next(timeout: .seconds(1)) == .endOfInput)
  }

  @Test func aWakeFromAnotherThreadEndsAWaitWithoutTimeout() throws {
    let pipe = Pipe()
    let reader = try KeyReader(descriptor: pipe.fileHandleForReading.fileDescriptor)
    let waker = reader.waker
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { waker.wake() }
    #expect(try reader.next(timeout: nil) == .woken)
  }
}
