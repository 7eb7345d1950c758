/// What the first line of a failed check says of its differences, for both kinds of check.
enum DiffSummary {
    /// `names` in order, each once: the stores that differ.
    static func once(_ names: [String]) -> [String] {
        var seen = Set<String>()
        return names.filter { seen.insert($0).inserted }
    }

    /// `1 difference`, `3 differences`.
    static func count(_ count: Int) -> String {
        "\(count) difference\(count == 1 ? "" : "s")"
    }
}
