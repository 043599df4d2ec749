#include "sim/files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include "sim/error.hpp"

using namespace snsim;
namespace fs = std::filesystem;

namespace {

/// A fresh directory, removed at the end of the test.
struct Scratch {
  fs::path path;
  Scratch() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/snsim-files-XXXXXX";
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("files: a file reads back whole, what is not a file is refused with one line naming it") {
  const Scratch dir;
  const fs::path file = dir.path / "a.txt";
  std::string big(200'000, 'x');  // more than one read() of the reader's buffer
  big += "end\n";
  write_file(file, big);
  CHECK(read_file(file) == big);
  CHECK(read_file_if_exists(file) == big);
  CHECK(!read_file_if_exists(dir.path / "none.txt"));
  const std::string none = (dir.path / "none.txt").string();
  CHECK_THROWS_WITH_AS(read_file(none), (none + ": cannot open the file").c_str(), InputError);
  CHECK_THROWS_WITH_AS(read_file(dir.path),
                       (dir.path.string() + ": not a regular file (a directory); expected a regular file").c_str(),
                       InputError);
  // A device may never end (/dev/zero) or wait for a user (a terminal).
  CHECK_THROWS_WITH_AS(read_file("/dev/zero"), "/dev/zero: not a regular file (a device); expected a regular file",
                       InputError);
  // A FIFO with no writer would block the open for ever: refused by its kind, before it is opened.
  const std::string fifo = (dir.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(read_file(fifo),
                       (fifo + ": not a regular file (a FIFO or pipe); expected a regular file").c_str(), InputError);
  // Larger than the limit: refused from its size, before it is read (sparse: no disk taken).
  fs::resize_file(file, 5'000);
  CHECK_THROWS_WITH_AS(read_file(file, Bytes{4'096}),
                       (file.string() + ": the file is larger than 4 KiB, the most snsim reads from one file").c_str(),
                       InputError);
  CHECK(read_file(file, Bytes{5'000}).size() == 5'000);
}

TEST_CASE("files: a write replaces the file whole and leaves nothing beside it, a directory is not replaced") {
  const Scratch dir;
  const fs::path file = dir.path / "report.json";
  write_file(file, "a longer first version\n");
  write_file(file, "short\n");
  CHECK(read_file(file) == "short\n");
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);  // no temporary left
  // The mode is the one a new file gets (0666 less the umask), as before the writes became atomic.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK((fs::status(file).permissions() & fs::perms::all) == static_cast<fs::perms>(0666 & ~mask));
  fs::create_directory(dir.path / "sub");
  const std::string sub = (dir.path / "sub").string();
  CHECK_THROWS_WITH_AS(write_file(sub, "x"), (sub + ": cannot write the file").c_str(), InputError);
  const std::string nowhere = (dir.path / "no" / "such" / "dir.json").string();
  CHECK_THROWS_WITH_AS(write_file(nowhere, "x"), (nowhere + ": cannot write the file").c_str(), InputError);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 2);
}

TEST_CASE("files: appends add to the end, a torn tail is cut, one writer holds the lock") {
  const Scratch dir;
  const fs::path file = dir.path / "results.jsonl";
  write_file(file, "one\ntw");
  {
    AppendFile out(file);
    CHECK(out.try_lock());
    AppendFile other(file);
    CHECK(!other.try_lock());  // a second writer, even in this process, waits for nothing and is refused
    out.truncate(4);           // "tw" off
    out.truncate(100);         // longer than the file: nothing to cut
    out.append("two\n");
    out.append("three\n");
  }
  CHECK(read_file(file) == "one\ntwo\nthree\n");
  AppendFile again(file);
  CHECK(again.try_lock());  // the lock went with the file's closing
  const std::string bad = (dir.path / "none" / "r.jsonl").string();
  CHECK_THROWS_WITH_AS(AppendFile{bad}, (bad + ": cannot open for appending: No such file or directory").c_str(),
                       InputError);
}
