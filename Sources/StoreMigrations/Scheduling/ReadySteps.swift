/// The steps whose dependencies are all done, lowest plan index first, so that ready work starts
/// in plan order. A binary min-heap of step indices.
struct ReadySteps {
    private var heap: [Int] = []

    var isEmpty: Bool { heap.isEmpty }

    mutating func insert(_ step: Int) {
        heap.append(step)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child] < heap[parent] else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popFirst() -> Int? {
        guard let first = heap.first else { return nil }
        let last = heap.removeLast()
        guard !heap.isEmpty else { return first }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left] < heap[smallest] { smallest = left }
            if right < heap.count, heap[right] < heap[smallest] { smallest = right }
            guard smallest != parent else { return first }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    mutating func removeAll() { heap.removeAll() }
}
