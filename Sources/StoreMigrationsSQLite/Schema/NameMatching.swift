import StoreMigrations

/// Which live item (table, or column of a table) each declared item continues, by name or by
/// renaming identifier.
///
/// A renaming identifier claims its live item only when the declared name is free: new, or
/// vacated by another rename (`a → b` while `b → c`). Otherwise a declared name the database
/// already has is that item, whatever its renaming identifier says: so a schema migrated once
/// matches itself, and a declaration never renames into a name that is taken. A live item that
/// nothing claims is dropped; it is never guessed to be a rename.
struct NameMatching {
    /// For each declared item, the index of the live item it continues, if any.
    let liveIndex: [Int?]
    /// `(declared, live)` pairs whose names differ, in an order in which each new name is free
    /// when its rename runs.
    let renames: [(declared: Int, live: Int)]
    /// Live items claimed by the renaming identifiers of several declared items (a split).
    let splits: [(live: Int, declared: [Int])]
    /// The live items no declared item continues, to be dropped.
    let unclaimedLive: [Int]

    init(declared: [(name: String, renamedFrom: String?)], live: [String]) {
        var liveByName: [String: Int] = [:]
        for (index, name) in live.enumerated() { liveByName[name.lowercased()] = index }
        var liveIndex = [Int?](repeating: nil, count: declared.count)
        var splits: [(live: Int, declared: [Int])] = []
        var claimed = Set<Int>()

        // Renaming identifiers first, for the declared items whose name is free: new, or
        // vacated by an earlier claim (each round may vacate names for the next).
        var claimedInRound = true
        while claimedInRound {
            var claims: [Int: [Int]] = [:]
            for index in declared.indices where liveIndex[index] == nil {
                let namesake = liveByName[declared[index].name.lowercased()]
                guard namesake.map(claimed.contains) ?? true, let old = declared[index].renamedFrom,
                    let live = liveByName[old.lowercased()], !claimed.contains(live)
                else { continue }
                claims[live, default: []].append(index)
            }
            claimedInRound = !claims.isEmpty
            for (live, claimants) in claims.sorted(by: { $0.key < $1.key }) {
                claimed.insert(live)
                if claimants.count == 1 {
                    liveIndex[claimants[0]] = live
                } else {
                    splits.append((live, claimants))
                }
            }
        }
        for index in declared.indices where liveIndex[index] == nil {
            if let live = liveByName[declared[index].name.lowercased()], !claimed.contains(live) {
                claimed.insert(live)
                liveIndex[index] = live
            }
        }

        var pending = declared.indices.compactMap { index in
            liveIndex[index].map { (declared: index, live: $0) }
        }.filter { !declared[$0.declared].name.isSameSQLName(as: live[$0.live]) }
        var renames: [(declared: Int, live: Int)] = []
        // A rename waits while its new name is still the old name of another pending rename.
        // Renames cannot form a cycle: a cycle's names all exist, so they match by name.
        while !pending.isEmpty {
            let ready = pending.firstIndex { rename in
                !pending.contains { live[$0.live].isSameSQLName(as: declared[rename.declared].name) }
            } ?? 0
            renames.append(pending.remove(at: ready))
        }
        self.liveIndex = liveIndex
        self.renames = renames
        self.splits = splits
        unclaimedLive = live.indices.filter { !claimed.contains($0) }
    }
}
