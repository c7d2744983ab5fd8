import ListStoreTesting
import Testing

/// What a test does without a package it needs: it skips, and the skip is listed at exit;
/// with `LISTSTORE_REQUIRE_ALL=1` (CI) it runs, so that a missing package fails the run.
@Suite struct PrerequisitesTests {
  @Test func aMissingPackageSkipsAndIsListed() {
    let skips = Prerequisites.Skips()
    #expect(!Prerequisites.check(false, requireAll: false, reason: "zsh is missing", into: skips))
    #expect(!Prerequisites.check(false, requireAll: false, reason: "zsh is missing", into: skips))
    #expect(!Prerequisites.check(false, requireAll: false, reason: "fish is missing", into: skips))
    #expect(skips.counts == ["zsh is missing": 2, "fish is missing": 1])
    #expect(
      skips.summary == """
        Tests skipped for want of a package (LISTSTORE_REQUIRE_ALL=1 makes each a failure):
          fish is missing
          zsh is missing

        """)
  }

  @Test func requiredOrPresentRunsAndRecordsNothing() {
    let skips = Prerequisites.Skips()
    #expect(Prerequisites.check(true, requireAll: false, reason: "here", into: skips))
    #expect(Prerequisites.check(false, requireAll: true, reason: "required", into: skips))
    #expect(
      Prerequisites.check(false, required: true, requireAll: false, reason: "old", into: skips))
    #expect(skips.counts.isEmpty)
    #expect(skips.summary.isEmpty)
  }

  @Test func aLibraryLoadsOrNot() {
    #expect(Prerequisites.loads("libc.so.6"))
    #expect(!Prerequisites.loads("libliststore-no-such-library.so.1"))
  }
}
