import Foundation
import ListStore
import ListStoreClient
import ListStoreClientTesting
import ListStoreServer
import PostgresTestSupport
import TestSupport
import Testing

/// How a remote observation ends: never by a dropped connection alone.
@Suite(.serialized) struct ObservationEndTests {
  func observe(_ server: TestServer, token: String? = nil) async throws -> (
    RemoteObservation<SectionMetadata, City>, ArrayRecorder<SectionMetadata, City>, StateLog
  ) {
    let list = try RemoteRepository(url: server.url, token: token).list(
      "cities", metadata: SectionMetadata.self, item: City.self)
    let observation = try await list.observe()
    let recorder = ArrayRecorder(observation.array, describe: \.name, header: { $0.header })
    let states = StateLog(observation.states)
    #expect(states.wait { $0 == .online })
    return (observation, recorder, states)
  }

  @Test func aListDeletedWhileTheServerWasDownCompletesTheArrayOnReconnection() async throws {
    let server = try TestServer()
    defer { server.remove() }
    try server.repository.createList("cities")
    let (observation, recorder, states) = try await observe(server)
    server.stop()
    #expect(states.wait { isOffline($0) })
    try server.repository.deleteList("cities")
    try server.start()
    #expect(recorder.wait { $0.isCompleted })
    #expect(recorder.error == nil)
    #expect(states.wait { $0 == .ended(nil) })
    withExtendedLifetime(observation) {}
  }

  @Test func aTokenRefusedOnReconnectionFailsTheArrayWithTheError() async throws {
    let server = try TestServer(tokens: try Tokens(parsing: "old read", file: "tokens"))
    defer { server.remove() }
    try server.repository.createList("cities")
    let (observation, recorder, states) = try await observe(server, token: "old")
    server.stop()
    try server.start(tokens: try Tokens(parsing: "new read", file: "tokens"))
    #expect(recorder.wait { $0.error != nil })
    #expect(recorder.error as? ListStoreError == .authenticationFailed(location: server.url))
    #expect(states.wait { if case .ended(_?) = $0 { true } else { false } })
    withExtendedLifetime(observation) {}
  }

  @Test func releasingAnObservationEndsIt() async throws {
    let server = try TestServer()
    defer { server.remove() }
    try server.repository.createList("cities")
    weak var released: RemoteObservation<SectionMetadata, City>?
    var states: StateLog?
    do {
      let (observation, _, log) = try await observe(server)
      released = observation
      states = log
    }
    #expect(released == nil)
    #expect(states?.wait { $0 == .ended(nil) } == true)
  }

  @Test func stoppingAnObservationCompletesItsArrayAndClosesTheStream() async throws {
    let server = try TestServer()
    defer { server.remove() }
    try server.repository.createList("cities")
    let (observation, recorder, states) = try await observe(server)
    observation.stop()
    #expect(recorder.wait { $0.isCompleted })
    #expect(states.wait { $0 == .ended(nil) })
  }

  @Test func observingAListThatDoesNotExistThrows() async throws {
    let server = try TestServer()
    defer { server.remove() }
    let list = try RemoteRepository(url: server.url).list(
      "nowhere", metadata: SectionMetadata.self, item: City.self)
    await #expect(throws: ListStoreError.listNotFound(name: "nowhere")) {
      _ = try await list.observe()
    }
  }
}
