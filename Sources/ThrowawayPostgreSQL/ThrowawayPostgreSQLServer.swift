// The package links libpq, and so needs a server to talk to, on Linux and macOS only.
#if os(Linux) || os(macOS)
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL server of its own for the tests, the replica demo and the benchmarks: `initdb`
/// into a new folder under `/tmp`, started with `pg_ctl` on a Unix socket in that folder (and on
/// a free loopback port when asked), run as the `postgres` user when the caller is root (the
/// server refuses to run as root), stopped and removed by ``stop()``.
///
/// ```swift
/// let server = try ThrowawayPostgreSQLServer(.init(folderPrefix: "my-demo"))
/// defer { server.stop() }
/// try server.createDatabase("orders")
/// let store = try PostgreSQLStore(server.connectionString(database: "orders"))
/// ```
///
/// The data is throwaway, so durability is off (`fsync`, `synchronous_commit` and
/// `full_page_writes`): a commit costs no disk flush. The server binaries are looked up in
/// `PG_BIN`, then `/usr/lib/postgresql/<version>/bin` (newest first), Homebrew's folders and
/// `PATH`; when there are none, the initializer throws an error saying what to install.
public final class ThrowawayPostgreSQLServer: Sendable {
    /// How the server is set up.
    public struct Configuration: Sendable {
        /// The start of the server's folder name in `/tmp`. The folder holds the Unix socket,
        /// whose path may not exceed about 100 bytes, hence `/tmp` rather than a longer
        /// temporary folder.
        public var folderPrefix: String
        /// When set, the server also listens on 127.0.0.1 (at ``ThrowawayPostgreSQLServer/port``),
        /// where the superuser logs in with this password (SCRAM); when `nil`, on the Unix socket
        /// only. The socket is always trusted.
        public var loopbackPassword: String?
        /// Server settings added to the throwaway defaults, each `name=value`, e.g.
        /// `"max_connections=200"`.
        public var settings: [String]

        /// A configuration; see the properties.
        public init(folderPrefix: String, loopbackPassword: String? = nil, settings: [String] = []) {
            self.folderPrefix = folderPrefix
            self.loopbackPassword = loopbackPassword
            self.settings = settings
        }
    }

    /// The superuser `initdb` creates, whom connection strings name.
    public static let superuser = "postgres"

    /// The server's folder: its data, its Unix socket, its log and the output of its programs.
    public let folder: URL
    /// The data folder `initdb` filled.
    public let dataDirectory: URL
    /// The port: on the loopback interface if the server listens there, else only the number in
    /// the Unix socket's name.
    public let port: Int
    /// The folder of `initdb`, `pg_ctl` and `createdb`.
    public let binaries: URL
    /// The user the server's programs run as when the caller is root, else `nil`.
    public let serverUser: String?
    /// How the server was set up.
    public let configuration: Configuration

    /// The folder of the server's Unix socket (libpq's `host`).
    public var socketDirectory: URL { folder }

    /// The server's log (`pg_ctl -l`): its `ERROR:` and `FATAL:` lines, among others, for every
    /// session of every database on the server.
    public var logFile: URL { folder.appendingPathComponent("server.log") }

    /// Creates the data folder with `initdb` and starts the server; ``stop()`` it when done.
    ///
    /// - Throws: ``ThrowawayPostgreSQLError`` when there are no server binaries, no user to run
    ///   them as (as root), or one of them fails (its output is in the error).
    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        binaries = try Self.findBinaries()
        serverUser = geteuid() == 0 ? Self.superuser : nil
        folder = URL(fileURLWithPath: "/tmp", isDirectory: true)
            .appendingPathComponent("\(configuration.folderPrefix)-\(UUID().uuidString.prefix(8))")
        dataDirectory = folder.appendingPathComponent("data")
        port = try Self.freePort()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var owned = [folder.path]
        var authentication = ["-A", "trust"]
        if let password = configuration.loopbackPassword {
            let passwordFile = folder.appendingPathComponent("password")
            try Data(password.utf8).write(to: passwordFile)
            owned.append(passwordFile.path)
            authentication = ["--pwfile", passwordFile.path, "--auth-local=trust", "--auth-host=scram-sha-256"]
        }
        if let serverUser {
            guard let account = getpwnam(serverUser) else {
                try? FileManager.default.removeItem(at: folder)
                throw ThrowawayPostgreSQLError(
                    "running as root, and PostgreSQL refuses to: a user \"\(serverUser)\" is needed to run the server as "
                        + "(`apt-get install postgresql` creates it)")
            }
            for path in owned { chown(path, account.pointee.pw_uid, account.pointee.pw_gid) }
        }
        do {
            try run("initdb", ["-D", dataDirectory.path, "-U", Self.superuser, "-E", "UTF8", "--no-sync", "--locale=C"] + authentication)
            try start()
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    /// Starts the server on its data folder. The initializer does; this is for a server that
    /// went down some other way than ``stop()`` (which removes the folder), e.g. `pg_ctl stop`.
    public func start() throws {
        try run("pg_ctl", ["-D", dataDirectory.path, "-l", logFile.path, "-w", "-t", "30", "-o", serverOptions, "start"])
    }

    /// `pg_ctl restart -m fast`: every session is terminated, committed data stays.
    public func restart() throws {
        try run("pg_ctl", ["-D", dataDirectory.path, "-l", logFile.path, "-w", "-t", "30", "-m", "fast", "-o", serverOptions, "restart"])
    }

    /// Stops the server at once (`-m immediate`: the data is throwaway) and removes its folder.
    public func stop() {
        _ = try? run("pg_ctl", ["-D", dataDirectory.path, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: folder)
    }

    /// A connection string over the Unix socket (trusted) to `database`.
    public func connectionString(database: String) -> String {
        "host=\(socketDirectory.path) port=\(port) user=\(Self.superuser) dbname=\(database)"
    }

    /// A connection string over TCP on the loopback interface to `database`, with `password`, or
    /// by default the configuration's ``Configuration/loopbackPassword``.
    public func tcpConnectionString(database: String, password: String? = nil) -> String {
        let password = password ?? configuration.loopbackPassword ?? ""
        return "host=127.0.0.1 port=\(port) user=\(Self.superuser) password=\(password) dbname=\(database)"
    }

    /// Creates an empty database `name` with `createdb`.
    public func createDatabase(_ name: String) throws {
        try run("createdb", ["-h", socketDirectory.path, "-p", String(port), "-U", Self.superuser, name])
    }

    /// Runs one of the server's programs (as ``serverUser`` when the caller is root) and returns
    /// its output, stopping it after `timeout` seconds.
    ///
    /// Started with `posix_spawn` and reaped with `waitpid`, its output in a file of the
    /// server's folder: the server that `pg_ctl start` leaves running inherits its parent's
    /// descriptors, so a pipe (or `Process`, which watches one) would not see the end until the
    /// server stops.
    @discardableResult
    public func run(_ tool: String, _ arguments: [String], timeout: Duration = .seconds(60)) throws -> String {
        let executable = binaries.appendingPathComponent(tool).path
        let argv = (serverUser.map { [Self.runuser, "-u", $0, "--", executable] } ?? [executable]) + arguments
        let output = folder.appendingPathComponent("\(tool)-\(UUID().uuidString.prefix(8)).out")
        let command = "\(tool) \(arguments.joined(separator: " "))"
        let pid = try Self.spawn(argv, output: output.path)
        let read = { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { break }
            if result < 0, errno != EINTR { throw ThrowawayPostgreSQLError("\(command): waitpid failed: errno \(errno)") }
            if ContinuousClock.now >= deadline {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                throw ThrowawayPostgreSQLError("\(command) ran past \(timeout) and was killed; its output:\n\(read())")
            }
            usleep(1_000)
        }
        // The status of a program that exited normally with 0 is 0 (WIFEXITED and WEXITSTATUS are
        // macros Swift does not import).
        guard status == 0 else { throw ThrowawayPostgreSQLError("\(command) failed (wait status \(status)); its output:\n\(read())") }
        return read()
    }

    /// A loopback port nothing listens on right now.
    public static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ThrowawayPostgreSQLError("socket() failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { throw ThrowawayPostgreSQLError("could not find a free loopback port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    // MARK: Internals

    /// The server's command-line options, the same for every start.
    private var serverOptions: String {
        let listen = configuration.loopbackPassword == nil ? "" : "127.0.0.1"
        let settings = ["listen_addresses=\(listen)", "fsync=off", "synchronous_commit=off", "full_page_writes=off"]
            + configuration.settings
        return "-k \(socketDirectory.path) -p \(port) " + settings.map { "-c " + $0 }.joined(separator: " ")
    }

    /// `runuser`, which runs a program as another user without asking for a password.
    private static var runuser: String {
        ["/usr/sbin/runuser", "/sbin/runuser"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/runuser"
    }

    private static func findBinaries() throws -> URL {
        let environment = ProcessInfo.processInfo.environment
        var candidates: [String] = []
        if let bin = environment["PG_BIN"] { candidates.append(bin) }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
        candidates += ["/opt/homebrew/bin", "/usr/local/bin", "/opt/homebrew/opt/postgresql/bin"]
        candidates += (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for folder in candidates
        where FileManager.default.isExecutableFile(atPath: folder + "/initdb") && FileManager.default.isExecutableFile(atPath: folder + "/pg_ctl") {
            return URL(fileURLWithPath: folder, isDirectory: true)
        }
        throw ThrowawayPostgreSQLError(
            "this starts a PostgreSQL server of its own, and no server binaries (initdb, pg_ctl) were found in PG_BIN, "
                + "/usr/lib/postgresql/*/bin, Homebrew's folders or PATH. Install them: `apt-get install postgresql` "
                + "(Debian, Ubuntu) or `brew install postgresql` (macOS), or point PG_BIN at their folder.")
    }

    /// Starts `argv` with standard input from `/dev/null` and both outputs into `output`.
    private static func spawn(_ argv: [String], output: String) throws -> pid_t {
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        #else
        var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else { throw ThrowawayPostgreSQLError("could not start \(argv[0]): \(String(cString: strerror(spawned)))") }
        return pid
    }
}

/// Why a ``ThrowawayPostgreSQLServer`` could not be set up, started or used, and what to do.
public struct ThrowawayPostgreSQLError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, with a program's output when one failed.
    public let description: String

    /// An error saying `description`.
    public init(_ description: String) {
        self.description = description
    }
}
#endif
