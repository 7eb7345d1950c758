/// Every registered migration of every manager, with the edges between them: each migration
/// follows the previous one of its manager, and follows the migrations it declares in `dependsOn`.
///
/// Building the graph validates it: duplicate versions, dependencies on unknown managers or
/// versions, dependencies ahead of the app version, and cycles, each a ``MigrationError``. The
/// work is O(V + E) apart from sorting each manager's versions, and nothing recurses, so graphs
/// of any depth fit on the call stack.
struct MigrationGraph {
    /// One manager as the graph sees it: pure data, no store.
    struct Manager: Sendable {
        let name: String
        /// Ascending.
        let versions: [Version]
        /// The migrations each version declares in `dependsOn`, by position.
        let dependencies: [[MigrationReference]]
    }

    let managers: [Manager]
    let appVersion: Version
    /// `firstNode[m]` is the node of manager `m`'s first migration; `firstNode[managers.count]`
    /// is the node count. A node's position in its manager is `node - firstNode[m]`.
    let firstNode: [Int]
    /// The position of each manager's first migration that is ahead of the app version.
    let aheadStart: [Int]
    /// Cross-store dependencies, compressed: node `n` depends on
    /// `dependencyTargets[dependencyStart[n]..<dependencyStart[n + 1]]`. The offsets are 32-bit
    /// and no array is kept per node beyond them: a plan of 100,000 migrations makes and frees
    /// every per-node array, and its time goes as much to the memory as to the work.
    private let dependencyStart: [Int32]
    let dependencyTargets: [Int]
    /// Whether every declared dependency points to a lower node (to a manager created earlier).
    private let dependenciesPointBack: Bool

    var nodeCount: Int { firstNode[managers.count] }

    init(managers: [Manager], appVersion: Version) throws {
        if let error = appVersion.parseError {
            throw MigrationError.invalidVersion(text: error.text, reason: error.reason, manager: nil)
        }
        guard !appVersion.isSubMigration else { throw MigrationError.invalidAppVersion(appVersion) }
        self.managers = managers
        self.appVersion = appVersion

        var firstNode = [0]
        firstNode.reserveCapacity(managers.count + 1)
        var aheadStart: [Int] = []
        aheadStart.reserveCapacity(managers.count)
        var managerIndex: [String: Int] = [:]
        managerIndex.reserveCapacity(managers.count)
        for (index, manager) in managers.enumerated() {
            managerIndex[manager.name] = index
            // Literals that are not versions sort first: one would be the first version.
            if let error = manager.versions.first?.parseError {
                throw MigrationError.invalidVersion(text: error.text, reason: error.reason, manager: manager.name)
            }
            for position in manager.versions.indices.dropFirst()
            where manager.versions[position] == manager.versions[position - 1] {
                throw MigrationError.duplicateMigration(
                    manager: manager.name, version: manager.versions[position - 1], alsoRegisteredAs: manager.versions[position])
            }
            firstNode.append(firstNode[index] + manager.versions.count)
            aheadStart.append(Self.partition(manager.versions) { $0.base > appVersion })
        }
        let nodeCount = firstNode[managers.count]

        var dependencyStart = [Int32](repeating: 0, count: nodeCount + 1)
        var dependencyTargets: [Int] = []
        var dependenciesPointBack = true
        try dependencyStart.withUnsafeMutableBufferPointer { dependencyStart in
            for (index, manager) in managers.enumerated() {
                let declared = manager.dependencies
                for position in declared.indices {
                    let node = firstNode[index] + position
                    // Most migrations declare no dependency: asking first spares iterating (and
                    // retaining) an empty list per node.
                    if declared[position].isEmpty {
                        dependencyStart[node + 1] = Int32(dependencyTargets.count)
                        continue
                    }
                    // Named only for an error.
                    var dependent: MigrationReference { MigrationReference(manager: manager.name, version: manager.versions[position]) }
                    for dependency in declared[position] {
                        if let error = dependency.version.parseError {
                            throw MigrationError.invalidVersion(text: error.text, reason: error.reason, manager: dependency.manager)
                        }
                        guard let target = managerIndex[dependency.manager] else {
                            throw MigrationError.unknownManager(dependency: dependency, of: dependent)
                        }
                        let targetVersions = managers[target].versions
                        let targetPosition = Self.partition(targetVersions) { $0 >= dependency.version }
                        guard targetPosition < targetVersions.count, targetVersions[targetPosition] == dependency.version else {
                            throw MigrationError.unknownMigration(dependency: dependency, of: dependent)
                        }
                        if position < aheadStart[index], targetPosition >= aheadStart[target] {
                            throw MigrationError.dependencyAhead(dependency: dependency, of: dependent, appVersion: appVersion)
                        }
                        let targetNode = firstNode[target] + targetPosition
                        dependenciesPointBack = dependenciesPointBack && targetNode < node
                        dependencyTargets.append(targetNode)
                    }
                    dependencyStart[node + 1] = Int32(dependencyTargets.count)
                }
            }
        }
        self.firstNode = firstNode
        self.aheadStart = aheadStart
        self.dependencyStart = dependencyStart
        self.dependencyTargets = dependencyTargets
        self.dependenciesPointBack = dependenciesPointBack
        try rejectCycles()
    }

    /// The manager of `node`: the last manager whose first node is at or before it.
    func managerOfNode(_ node: Int) -> Int {
        var low = 0, high = managers.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if firstNode[middle] <= node { low = middle } else { high = middle - 1 }
        }
        return low
    }

    func reference(of node: Int) -> MigrationReference {
        let manager = managerOfNode(node)
        return MigrationReference(manager: managers[manager].name, version: managers[manager].versions[node - firstNode[manager]])
    }

    func dependencies(of node: Int) -> ArraySlice<Int> {
        dependencyTargets[Int(dependencyStart[node])..<Int(dependencyStart[node + 1])]
    }

    /// Whether `node` declares dependencies.
    func hasDependencies(_ node: Int) -> Bool {
        dependencyStart[node] != dependencyStart[node + 1]
    }

    /// Whether `node` follows the previous migration of its manager.
    private func hasChainPredecessor(_ node: Int) -> Bool {
        node > firstNode[managerOfNode(node)]
    }

    /// Every edge, chain and declared, as two parallel arrays (predecessor, successor).
    func edges() -> (from: [Int], to: [Int]) {
        var from: [Int] = [], to: [Int] = []
        from.reserveCapacity(nodeCount + dependencyTargets.count)
        to.reserveCapacity(nodeCount + dependencyTargets.count)
        for node in 0..<nodeCount {
            if hasChainPredecessor(node) {
                from.append(node - 1)
                to.append(node)
            }
            for target in dependencies(of: node) {
                from.append(target)
                to.append(node)
            }
        }
        return (from, to)
    }

    /// Kahn's algorithm over the whole graph; if some nodes are never freed, they contain a cycle,
    /// which is found by walking predecessors backwards until one repeats.
    ///
    /// A graph whose every edge goes from a lower node to a higher one (chains always do; a
    /// declared dependency does when its manager was created before the dependent's) has no
    /// cycle, since node order is then a topological order: the graph notes it while it reads the
    /// declared edges, so most apps need neither Kahn's arrays nor another pass.
    private func rejectCycles() throws {
        if dependenciesPointBack { return }
        let (from, to) = edges()
        var order = TopologicalOrder(count: nodeCount, from: from, to: to)
        let waves = order.waves()
        guard let start = waves.firstIndex(where: { $0 == nil }) else { return }
        throw MigrationError.cycle(cycle(through: start, isFreed: { waves[$0] != nil }))
    }

    /// A cycle among the nodes Kahn's algorithm could not free, in run order, rotated to start at
    /// its smallest node (by manager name, then version) and closed by repeating it.
    private func cycle(through start: Int, isFreed: (Int) -> Bool) -> [MigrationReference] {
        var visitedAt: [Int: Int] = [:]
        var walk: [Int] = []
        var node = start
        while visitedAt[node] == nil {
            visitedAt[node] = walk.count
            walk.append(node)
            // Every unfreed node still waits on an unfreed predecessor.
            if hasChainPredecessor(node), !isFreed(node - 1) {
                node -= 1
            } else {
                node = dependencies(of: node).first { !isFreed($0) }!
            }
        }
        let loop = Array(walk[visitedAt[node]!...].reversed())
        let references = loop.map(reference(of:))
        let smallest = references.indices.min { lhs, rhs in
            (references[lhs].manager, references[lhs].version) < (references[rhs].manager, references[rhs].version)
        }!
        let rotated = Array(references[smallest...] + references[..<smallest])
        return rotated + [rotated[0]]
    }

    /// The first index whose element satisfies `predicate`, for a predicate that is false then
    /// true along the sorted array.
    static func partition(_ versions: [Version], where predicate: (Version) -> Bool) -> Int {
        var low = 0, high = versions.count
        while low < high {
            let middle = (low + high) / 2
            if predicate(versions[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
