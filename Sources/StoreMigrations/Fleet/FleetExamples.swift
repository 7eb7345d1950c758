/// The items of the `limit` lowest-numbered tenants seen, whatever order they come in.
struct FleetExamples<Item> {
    let limit: Int
    private var numbered: [(index: Int, item: Item)] = []
    /// The lowest number seen, examples kept or not: groups are ordered by it.
    private(set) var firstIndex = Int.max

    init(limit: Int) {
        self.limit = limit
    }

    mutating func add(_ index: Int, _ item: Item) {
        firstIndex = min(firstIndex, index)
        guard numbered.count < limit || (numbered.last.map { index < $0.index } ?? false) else { return }
        let position = numbered.firstIndex { $0.index > index } ?? numbered.count
        numbered.insert((index, item), at: position)
        if numbered.count > limit { numbered.removeLast() }
    }

    var items: [Item] { numbered.map(\.item) }
}
