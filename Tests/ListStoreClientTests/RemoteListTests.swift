import CurlKit
import Foundation
import ListStore
import ListStoreClient
import ListStoreClientTesting
import ListStoreServer
import Observable2D
import PostgresTestSupport
import ReactiveCore
import TestSupport
import Testing

struct City: Codable, Sendable, Equatable {
  var name: String
}

typealias CitySection = Observable2DArraySection<SectionMetadata, City>

/// The connection states an observation went through, to wait for one.
final class StateLog: @unchecked Sendable {
  // Touched under `condition` only.
  private let condition = NSCondition()
  private var states: [ConnectionState] = []
  private let bag = DisposeBag()

  init(_ states: Property<ConnectionState>) {
    states.observeNext { [weak self] state in
      guard let self else { return }
      condition.lock()
      self.states.append(state)
      condition.broadcast()
      condition.unlock()
    }.disposed(by: bag)
  }

  var all: [ConnectionState] {
    condition.lock()
    defer { condition.unlock() }
    return states
  }

  /// Waits until a state satisfying `matches` was recorded, for at most `timeout` seconds
  /// (a bound for a test that would hang, not the way it synchronizes).
  @discardableResult
  func wait(timeout: TimeInterval = TestLimits.eventSeconds, for matches: (ConnectionState) -> Bool)
    -> Bool
  {
    let deadline = Date().addingTimeInterval(timeout)
    condition.lock()
    defer { condition.unlock() }
    while !states.contains(where: matches) {
      if !condition.wait(until: deadline) { return states.contains(where: matches) }
    }
    return true
  }
}

func isOffline(_ state: ConnectionState) -> Bool {
  if case .offline = state { return true }
  return false
}

@Suite(.serialized) struct RemoteListTests {
  @Test func aRemoteListIsReadAndWrittenWithTheLocalErrors() async throws {
    let server = try TestServer()
    defer { server.remove() }
    let remote = try RemoteRepository(url: server.url)
    try await remote.createList("cities")
    let cities = remote.list("cities", metadata: SectionMetadata.self, item: City.self)
    let section = try await cities.appendSection(SectionMetadata(header: "Cities"))
    let paris = try await cities.appendItem(City(name: "Paris"), toSectionWithID: section)
    let berlin = try await cities.appendItem(City(name: "Berlin"), toSectionWithID: section)
    let rome = try await cities.insert(item: City(name: "Rome"), before: berlin)
    try await cities.replaceItem(id: paris, with: City(name: "Paris, France"))
    try await cities.moveItem(id: berlin, before: paris)
    let oslo = try await cities.insert(item: City(name: "Oslo"), atRow: 0, inSectionWithID: section)
    try await cities.removeItem(id: oslo)

    let sections = try await cities.sections()
    #expect(sections.map(\.metadata) == [SectionMetadata(header: "Cities")])
    #expect(
      Array(sections[0].items) == [
        City(name: "Berlin"), City(name: "Paris, France"), City(name: "Rome"),
      ])
    #expect(Array(sections[0].items.ids) == [berlin, paris, rome])
    // The server's database says the same.
    let local = try server.repository.list(
      "cities", metadata: SectionMetadata.self, item: City.self)
    #expect(try local.sections() == sections)
    #expect(try await remote.lists().map(\.name) == ["cities"])

    // Errors are the cases a local list throws.
    await #expect(throws: ListStoreError.itemNotFound(id: 999)) {
      try await cities.removeItem(id: 999)
    }
    await #expect(throws: ListStoreError.sectionNotFound(id: 999)) {
      try await cities.appendItem(City(name: "X"), toSectionWithID: 999)
    }
    await #expect(throws: ListStoreError.insertionOutOfRange(section: 0, row: 7, limit: 3)) {
      try await cities.insert(item: City(name: "X"), atRow: 7, inSectionWithID: section)
    }
    await #expect(throws: ListStoreError.listNotFound(name: "towns")) {
      try await remote.list("towns", metadata: SectionMetadata.self, item: City.self).sections()
    }
    await #expect(throws: ListStoreError.listExists(name: "cities")) {
      try await remote.createList("cities")
    }
    try await remote.deleteList("cities")
    #expect(try await remote.lists().isEmpty)
  }

  @Test func anUnreachableServerAndARefusedTokenAreErrorsOfTheirOwn() async throws {
    let server = try TestServer(
      tokens: try Tokens(parsing: "writer write\nreader read", file: "t"))
    defer { server.remove() }
    try server.repository.createList("cities")
    let anonymous = try RemoteRepository(url: server.url)
    await #expect(throws: ListStoreError.authenticationFailed(location: server.url)) {
      try await anonymous.lists()
    }
    let reader = try RemoteRepository(url: server.url, token: "reader")
    #expect(try await reader.lists().count == 1)
    await #expect {
      try await reader.createList("towns")
    } throws: { error in
      if case .permissionDenied? = error as? ListStoreError { return true }
      return false
    }
    server.stop()
    await #expect {
      try await reader.lists()
    } throws: { error in
      if case .serverUnreachable? = error as? ListStoreError { return true }
      return false
    }
    #expect(throws: ListStoreError.self) { try RemoteRepository(url: "ftp://example.com") }
  }

  @Test func anObservationFollowsWritesOfEveryClient() async throws {
    let server = try TestServer()
    defer { server.remove() }
    let local = try server.repository.createList(
      "cities", metadata: SectionMetadata.self, item: City.self)
    let section = try local.appendSection(SectionMetadata(header: "Cities"))
    try local.appendItem(City(name: "Paris"), toSectionWithID: section)
    let remote = try RemoteRepository(url: server.url)
    let cities = remote.list("cities", metadata: SectionMetadata.self, item: City.self)
    let observation = try await cities.observe()
    let recorder = ArrayRecorder(observation.array, describe: \.name, header: { $0.header })
    #expect(recorder.sections == (try local.sections()))
    let states = StateLog(observation.states)
    #expect(states.wait { $0 == .online })

    // Through the server, through its repository, and through another connection to
    // the file (another process's writes, seen through the file watch).
    let berlin = try await cities.appendItem(City(name: "Berlin"), toSectionWithID: section)
    try local.appendItem(City(name: "Rome"), toSectionWithID: section)
    let other = try Repository(path: server.databasePath)
    let foreign = try other.list("cities", metadata: SectionMetadata.self, item: City.self)
    try foreign.moveItem(id: berlin, to: IndexPath(item: 0, section: 0))
    try await cities.appendSection(SectionMetadata(header: "Towns"))
    let expected = try local.sections()
    #expect(recorder.wait { $0.sections == expected }, "\(recorder.sections) != \(expected)")
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
    #expect(observation.seq == (try server.repository.changeLogPosition()))
    // The deletion of the list ends the events.
    try server.repository.deleteList("cities")
    #expect(recorder.wait { $0.isCompleted })
    #expect(states.wait { $0 == .ended(nil) })
  }

  @Test func anObservationResumesAfterTheServerRestartsWithNothingLostOrRepeated() async throws {
    let server = try TestServer()
    defer { server.remove() }
    let local = try server.repository.createList(
      "cities", metadata: SectionMetadata.self, item: City.self)
    let section = try local.appendSection(SectionMetadata(header: "Cities"))
    let remote = try RemoteRepository(url: server.url)
    let observation = try await remote.list(
      "cities", metadata: SectionMetadata.self, item: City.self
    ).observe()
    let recorder = ArrayRecorder(observation.array, describe: \.name, header: { $0.header })
    let states = StateLog(observation.states)
    #expect(states.wait { $0 == .online })

    for round in 0..<3 {
      server.stop()
      #expect(states.wait { isOffline($0) })
      // Written while the client is cut off: it must arrive once the server is back.
      let other = try Repository(path: server.databasePath)
      let list = try other.list("cities", metadata: SectionMetadata.self, item: City.self)
      for number in 0..<3 {
        try list.appendItem(City(name: "R\(round)-\(number)"), toSectionWithID: section)
      }
      try server.start()
      let expected = try local.sections()
      #expect(recorder.wait { $0.sections == expected }, "round \(round)")
    }
    #expect(recorder.problems.isEmpty, "\(recorder.problems)")
    #expect(recorder.sections[0].items.count == 9)
    #expect(states.all.contains(.online))
    // A restarted server's feed starts after what the client saw: it resynchronises with
    // one changeset from a fresh snapshot, and says so.
    #expect(states.all.contains(.resynchronising))
  }

  @Test func changesetsComeAsAnAsyncSequence() async throws {
    let server = try TestServer()
    defer { server.remove() }
    let local = try server.repository.createList(
      "cities", metadata: SectionMetadata.self, item: City.self)
    let section = try local.appendSection(SectionMetadata(header: "Cities"))
    let cities = try RemoteRepository(url: server.url).list(
      "cities", metadata: SectionMetadata.self, item: City.self)
    let changesets = try await cities.changesets()
    try local.appendItem(City(name: "Oslo"), toSectionWithID: section)
    try local.appendItem(City(name: "Lund"), toSectionWithID: section)
    var seen: [String] = []
    for try await changeset in changesets {
      seen += changeset.insertedItems.map(\.value.name)
      if seen.count == 2 { break }
    }
    #expect(seen == ["Oslo", "Lund"])
  }
}

/// The live page's cookie authorizes reads, and writes only with the header its script
/// adds: a page of another origin cannot add it without a preflight the server refuses.
@Suite struct CookieTests {
  @Test func aCookieWritesOnlyWithThePagesHeader() throws {
    let server = try TestServer(tokens: try .init(parsing: "secret write", file: "tokens"))
    defer { server.remove() }
    try server.repository.createList("l")
    let client = try HTTPClient()
    let cookie = ("Cookie", "liststore_token=secret")
    let read = try client.perform(
      .init(method: "GET", url: server.url + "/v1/lists", headers: [cookie]))
    #expect(read.status == 200)
    let body = Array("{\"header\":\"S\",\"footer\":null}".utf8)
    let json = ("Content-Type", "application/json")
    let forged = try client.perform(
      .init(
        method: "POST", url: server.url + "/v1/lists/l/sections", headers: [cookie, json],
        body: body))
    #expect(forged.status == 403)
    let fromThePage = try client.perform(
      .init(
        method: "POST", url: server.url + "/v1/lists/l/sections",
        headers: [cookie, json, ("X-Requested-With", "liststore")], body: body))
    #expect(fromThePage.status == 201)
    // The page's address with a token sets the cookie and sends the browser on without it.
    let landing = try client.perform(
      .init(method: "GET", url: server.url + "/lists/l?access_token=secret"))
    #expect(landing.status == 303)
    #expect(landing.headers["location"] == "/lists/l")
    #expect(landing.headers["set-cookie"]?.contains("HttpOnly; SameSite=Strict") == true)
  }
}
