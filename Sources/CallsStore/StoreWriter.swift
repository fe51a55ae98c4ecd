import Foundation

/// Takes the rooms' durable writes off the signalling path: requests queue up while a batch
/// commits, and the next batch takes them all (group commit: one transaction and one fsync
/// per batch, not per join). Each receipt goes to `onReceipts` after its batch committed, so
/// the rooms acknowledge a join, leave or chat only once it is on disk, or report it failed.
///
/// Thread rules: `submit` and `waitUntilIdle` from any thread; the batches run on the writer's
/// own serial queue, which alone touches `refs`. `onReceipts` is called on that queue (it must
/// hand off: the room runner hops to its own queue).
package final class StoreWriter: @unchecked Sendable {
    private let store: CallStore
    private let queue = DispatchQueue(label: "callroom.store-writer")
    private let lock = NSLock()
    private var pending: [StoreRequest] = []
    private var draining = false
    /// Confined to `queue`.
    private var refs = StoreRefs()
    private let maxBatch: Int
    private let onReceipts: @Sendable ([StoreReceipt]) -> Void

    package init(store: CallStore, maxBatch: Int = 512, onReceipts: @escaping @Sendable ([StoreReceipt]) -> Void) {
        self.store = store
        self.maxBatch = max(1, maxBatch)
        self.onReceipts = onReceipts
    }

    /// Queues a request; its receipt follows its batch's commit.
    package func submit(_ request: StoreRequest) {
        let start = lock.withLock { () -> Bool in
            pending.append(request)
            defer { draining = true }
            return !draining
        }
        if start { queue.async { self.drain() } }
    }

    /// Blocks until every request submitted so far has been written and its receipt handed on.
    package func waitUntilIdle() {
        while true {
            queue.sync {}
            if lock.withLock({ pending.isEmpty && !draining }) { return }
        }
    }

    /// Blocks until every write so far is on disk and the runner on `queue` (which hands the
    /// receipts to its core) has handled them all: `hasPending` is asked on `queue`.
    package func settle(runner queue: DispatchQueue, hasPending: () -> Bool) {
        repeat {
            waitUntilIdle()
            queue.sync {}
        } while queue.sync(execute: hasPending)
    }

    private func drain() {
        dispatchPrecondition(condition: .onQueue(queue))
        while true {
            let batch = lock.withLock { () -> [StoreRequest] in
                guard !pending.isEmpty else {
                    draining = false
                    return []
                }
                let n = min(maxBatch, pending.count)
                let b = Array(pending.prefix(n))
                pending.removeFirst(n)
                return b
            }
            guard !batch.isEmpty else { return }
            onReceipts(store.commit(batch, refs: &refs))
        }
    }
}
