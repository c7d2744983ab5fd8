import Foundation
import TestSupport
import Testing

@testable import ListStoreServer

/// docs/openapi.json describes the whole API: every route the server answers is in it,
/// the server serves it as it is, and the checker the HTTP tests run every answer through
/// tells a fitting answer from one that does not fit.
@Suite struct OpenAPITests {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

  @Test func everyRouteTheServerAnswersIsDescribed() throws {
    let document = try #require(OpenAPIValidator.document)
    guard case .object(let paths)? = document["paths"] else {
      Issue.record("no paths")
      return
    }
    var described: Set<String> = []
    for (template, item) in paths {
      guard case .object(let methods) = item else { continue }
      for method in methods.keys where method != "parameters" {
        let pattern = template.split(separator: "/").map { $0.hasPrefix("{") ? "*" : String($0) }
        described.insert(method.uppercased() + " /" + pattern.joined(separator: "/"))
      }
    }
    var served: Set<String> = ["GET /healthz", "GET /metrics", "GET /", "GET /lists/*"]
    for route in ListServer.routes {
      for entry in route.methods {
        served.insert(entry.method + " /v1/" + route.pattern.joined(separator: "/"))
      }
    }
    #expect(
      served == described,
      "served but not described: \(served.subtracting(described)); described but not served: \(described.subtracting(served))"
    )
  }

  @Test func theServerServesTheDescriptionAsTheRepositoryHasIt() throws {
    let database = try TestEngine.sqlite.makeDatabase()
    defer { database.remove() }
    let folder = database.folder
    try Data("T read\n".utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    let server = try ServerProcess(
      location: database.location, arguments: ["--tokens", folder.file("tokens")])
    defer { server.stop() }
    // Without a token: it describes the API, and holds no secret.
    let served = try http("GET", server.base + "/v1/openapi.json")
    #expect(served.status == 200)
    let file = try String(
      contentsOf: Self.root.appendingPathComponent("docs/openapi.json"), encoding: .utf8)
    #expect(served.body == file)
  }

  @Test func theCheckerTellsAFittingAnswerFromOneThatDoesNot() {
    func problems(_ method: String, _ path: String, _ status: Int, _ body: String) -> [String] {
      OpenAPIValidator.problems(
        method: method, path: path, status: status, contentType: "application/json",
        body: Array(body.utf8))
    }
    #expect(
      problems("GET", "/v1/lists", 200, #"{"lists":[{"id":1,"name":"a","sections":0,"items":0}]}"#)
        .isEmpty)
    #expect(
      !problems("GET", "/v1/lists", 200, #"{"lists":[{"id":1,"name":"a","sections":0}]}"#).isEmpty)
    #expect(!problems("GET", "/v1/lists", 200, #"{"lists":[],"extra":1}"#).isEmpty)
    #expect(
      !problems(
        "GET", "/v1/lists", 200, #"{"lists":[{"id":1.5,"name":"a","sections":0,"items":0}]}"#
      ).isEmpty)
    #expect(!problems("GET", "/v1/lists", 299, "{}").isEmpty)
    #expect(problems("GET", "/v1/lists", 404, #"{"error":"e","code":"notFound"}"#).isEmpty)
    #expect(!problems("GET", "/v1/lists", 404, #"{"error":"e","code":"noSuchCode"}"#).isEmpty)
    #expect(
      problems(
        "GET", "/v1/permissions", 200,
        #"{"read":true,"write":false,"readLists":["a"],"writeLists":"*"}"#
      ).isEmpty)
    #expect(
      !problems(
        "GET", "/v1/permissions", 200,
        #"{"read":true,"write":false,"readLists":"all","writeLists":"*"}"#
      ).isEmpty)
    #expect(problems("GET", "/nowhere", 200, "{}").isEmpty)
  }
}
