// The `checkpoint` state file (TensorFlow's CheckpointState in protobuf
// text format) and CheckpointManager.
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "sluice/core/file.h"
#include "sluice/core/filesystem.h"
#include "sluice/nn/checkpoint.h"
#include "sluice/records/tensor_bundle.h"

namespace sluice::nn {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStateFile = "checkpoint";
// A state file is a few lines per checkpoint; refuse absurd ones.
constexpr std::uintmax_t kMaxStateFileBytes = 64 << 20;

std::string StatePath(const std::string& dir) {
  return sluice::JoinPath(dir.empty() ? "." : dir, kStateFile);
}

// os.path.join(dir, path) for a relative `path` (an absolute path or a URI
// stays as it is).
std::string JoinPath(const std::string& dir, const std::string& path) {
  if (dir.empty() || (!path.empty() && path[0] == '/') || IsRemotePath(path)) return path;
  return sluice::JoinPath(dir, path);
}

// Paths inside `dir` become relative to it (save_relative_paths=True).
std::string RelativeTo(const std::string& dir, const std::string& path) {
  if (IsRemotePath(path) || IsRemotePath(dir)) {
    const std::string parent = ParentPath(path);
    const bool same = parent == dir || parent + "/" == dir;
    return same ? BaseName(path) : path;
  }
  const fs::path p(path);
  const fs::path d = fs::path(dir.empty() ? "." : dir).lexically_normal();
  fs::path parent = p.parent_path().lexically_normal();
  if (parent.empty()) parent = ".";
  if (parent == d || parent / "" == d || parent == d / "") return p.filename().string();
  if (p.is_absolute()) {
    std::error_code ec;
    const fs::path abs_dir = fs::absolute(d, ec);
    if (!ec) return p.lexically_normal().lexically_relative(abs_dir).string();
  }
  return path;
}

// Python's text_format / CEscape for a bytes field (as_utf8=False).
std::string CEscape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\'': out += "\\'"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[5];
          std::snprintf(buf, sizeof(buf), "\\%03o", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// Python's repr() of a float: shortest round-trip digits, ".0" on integers.
std::string FormatDouble(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, end);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// --- A small protobuf text-format reader for CheckpointState -----------------

class TextReader {
 public:
  TextReader(std::string_view text, std::string where) : text_(text), where_(std::move(where)) {}

  Status Parse(CheckpointState* state) {
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size()) return Status::OK();
      std::string field;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        field += text_[pos_++];
      }
      if (field.empty()) return Error("expected a field name");
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':') return Error("expected ':' after " + field);
      ++pos_;
      SkipSpace();
      if (field == "model_checkpoint_path" || field == "all_model_checkpoint_paths") {
        std::string value;
        SLUICE_RETURN_IF_ERROR(String(&value));
        if (field == "model_checkpoint_path") {
          state->model_checkpoint_path = std::move(value);
        } else {
          state->all_model_checkpoint_paths.push_back(std::move(value));
        }
      } else if (field == "all_model_checkpoint_timestamps" ||
                 field == "last_preserved_timestamp") {
        double value;
        SLUICE_RETURN_IF_ERROR(Number(&value));
        if (field == "last_preserved_timestamp") {
          state->last_preserved_timestamp = value;
        } else {
          state->all_model_checkpoint_timestamps.push_back(value);
        }
      } else if (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\'')) {
        std::string ignored;
        SLUICE_RETURN_IF_ERROR(String(&ignored));  // a field we do not know
      } else {
        double ignored;
        SLUICE_RETURN_IF_ERROR(Number(&ignored));
      }
    }
  }

 private:
  Status Error(const std::string& what) const {
    return Status::DataLoss(where_ + ": " + what + " at byte " + std::to_string(pos_));
  }
  void SkipSpace() {
    while (pos_ < text_.size()) {
      if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      } else if (text_[pos_] == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  Status String(std::string* out) {
    if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '\'')) {
      return Error("expected a quoted string");
    }
    const char quote = text_[pos_++];
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') return Error("unterminated string");
      const char c = text_[pos_++];
      if (c == quote) return Status::OK();
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= text_.size()) return Error("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'a': *out += '\a'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'v': *out += '\v'; break;
        case '"':
        case '\'':
        case '\\':
        case '?': *out += e; break;
        case 'x': {
          int v = 0, n = 0;
          while (n < 2 && pos_ < text_.size() &&
                 std::isxdigit(static_cast<unsigned char>(text_[pos_]))) {
            v = v * 16 + std::stoi(std::string(1, text_[pos_++]), nullptr, 16);
            ++n;
          }
          if (n == 0) return Error("bad \\x escape");
          *out += static_cast<char>(v);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0', n = 1;
            while (n < 3 && pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '7') {
              v = v * 8 + (text_[pos_++] - '0');
              ++n;
            }
            *out += static_cast<char>(v & 0xff);
          } else {
            return Error(std::string("unknown escape \\") + e);
          }
      }
    }
  }
  Status Number(double* out) {
    const size_t start = pos_;
    while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    const std::string_view token = text_.substr(start, pos_ - start);
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), *out);
    if (ec != std::errc() || end != token.data() + token.size()) {
      pos_ = start;
      return Error("expected a number");
    }
    return Status::OK();
  }

  std::string_view text_;
  std::string where_;
  size_t pos_ = 0;
};

// Writes `contents` to `path` through a temporary file renamed over it,
// fsynced: the state file is what a restart trusts.
Status AtomicWrite(const std::string& path, std::string_view contents) {
  OutputFileOptions options;
  options.sync = true;
  return WriteFileAtomically(path, contents, options);
}

// Best effort, as tf.train.CheckpointManager's: a file that cannot be
// removed stays.
void DeleteCheckpointFiles(const std::string& prefix) {
  (void)DeletePath(BundleIndexFilename(prefix));
  const std::string parent = ParentPath(prefix);
  const std::string dir = parent.empty() ? "." : parent;
  const std::string data_start = BaseName(prefix) + ".data-";
  Result<std::vector<FileInfo>> entries = ListFolder(dir);
  if (!entries.ok()) return;
  for (const FileInfo& e : *entries) {
    if (!e.is_dir && BaseName(e.path).starts_with(data_start)) (void)DeletePath(e.path);
  }
}

}  // namespace

Result<CheckpointState> ReadCheckpointState(const std::string& dir) {
  const std::string path = StatePath(dir);
  Result<std::string> text = ReadFileToString(path, kMaxStateFileBytes);
  if (!text.ok()) {
    const Status& s = text.status();
    if (s.code() == StatusCode::kNotFound) {
      return Status::NotFound("no checkpoint state file " + path + ": " + std::string(s.message()));
    }
    if (s.code() == StatusCode::kResourceExhausted) {
      return Status::DataLoss("checkpoint state file too large: " + std::string(s.message()));
    }
    return s.WithContext("cannot read the checkpoint state file");
  }
  return ParseCheckpointState(*text, dir, path);
}

Result<CheckpointState> ParseCheckpointState(std::string_view text, const std::string& dir,
                                             const std::string& name) {
  CheckpointState state;
  SLUICE_RETURN_IF_ERROR(TextReader(text, "checkpoint state file " + name).Parse(&state));
  if (!state.model_checkpoint_path.empty()) {
    state.model_checkpoint_path = JoinPath(dir, state.model_checkpoint_path);
  }
  for (std::string& p : state.all_model_checkpoint_paths) p = JoinPath(dir, p);
  return state;
}

Status WriteCheckpointState(const std::string& dir, const CheckpointState& state) {
  std::string text;
  if (!state.model_checkpoint_path.empty()) {
    text += "model_checkpoint_path: \"" + CEscape(RelativeTo(dir, state.model_checkpoint_path)) +
            "\"\n";
  }
  for (const std::string& p : state.all_model_checkpoint_paths) {
    text += "all_model_checkpoint_paths: \"" + CEscape(RelativeTo(dir, p)) + "\"\n";
  }
  for (double t : state.all_model_checkpoint_timestamps) {
    text += "all_model_checkpoint_timestamps: " + FormatDouble(t) + "\n";
  }
  if (state.last_preserved_timestamp != 0) {
    text += "last_preserved_timestamp: " + FormatDouble(state.last_preserved_timestamp) + "\n";
  }
  return AtomicWrite(StatePath(dir), text);
}

std::optional<std::string> LatestCheckpoint(const std::string& dir) {
  Result<CheckpointState> state = ReadCheckpointState(dir);
  if (!state.ok() || state->model_checkpoint_path.empty()) return std::nullopt;
  Result<bool> exists = PathExists(BundleIndexFilename(state->model_checkpoint_path));
  if (!exists.ok() || !*exists) return std::nullopt;
  return state->model_checkpoint_path;
}

// --- CheckpointManager -------------------------------------------------------

CheckpointManager::CheckpointManager(Checkpoint* checkpoint, std::string directory, int max_to_keep,
                                     std::string checkpoint_name)
    : checkpoint_(checkpoint),
      directory_(std::move(directory)),
      max_to_keep_(max_to_keep),
      prefix_(JoinPath(directory_, checkpoint_name)) {
  const double now = Now();
  Result<CheckpointState> state = ReadCheckpointState(directory_);
  if (!state.ok()) {
    // A second back, as TensorFlow does, so that a manager re-created at
    // once still treats its own new checkpoints as deletable.
    last_preserved_timestamp_ = now - 1.0;
    return;
  }
  if (!state->model_checkpoint_path.empty()) latest_ = state->model_checkpoint_path;
  last_preserved_timestamp_ = std::min(state->last_preserved_timestamp, now);
  std::vector<double> stamps = state->all_model_checkpoint_timestamps;
  if (stamps.empty()) {
    stamps.assign(state->all_model_checkpoint_paths.size(), last_preserved_timestamp_);
  }
  const size_t n = std::min(stamps.size(), state->all_model_checkpoint_paths.size());
  for (size_t i = 0; i < n; ++i) {
    // Checkpoints from before the last preserved time are kept for good.
    const double t = std::min(stamps[i], now);
    if (t > last_preserved_timestamp_) {
      checkpoints_.push_back(state->all_model_checkpoint_paths[i]);
      timestamps_.push_back(t);
    }
  }
}

Status CheckpointManager::RecordState() {
  CheckpointState state;
  state.model_checkpoint_path = latest_.value_or("");
  state.all_model_checkpoint_paths = checkpoints_;
  state.all_model_checkpoint_timestamps = timestamps_;
  state.last_preserved_timestamp = last_preserved_timestamp_;
  return WriteCheckpointState(directory_, state);
}

Result<std::string> CheckpointManager::Save(std::optional<int64_t> checkpoint_number,
                                            const CheckpointOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::string path,
                          checkpoint_->SaveNumbered(prefix_, checkpoint_number, options));
  const double now = Now();
  for (size_t i = 0; i < checkpoints_.size(); ++i) {
    if (checkpoints_[i] == path) {  // overwritten: it moves to the back
      checkpoints_.erase(checkpoints_.begin() + static_cast<std::ptrdiff_t>(i));
      timestamps_.erase(timestamps_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  checkpoints_.push_back(path);
  timestamps_.push_back(now);
  latest_ = path;
  // Record the new checkpoint before deleting, then again without the
  // deleted ones, as TensorFlow does.
  SLUICE_RETURN_IF_ERROR(RecordState());
  if (max_to_keep_ > 0 && checkpoints_.size() > static_cast<size_t>(max_to_keep_)) {
    while (checkpoints_.size() > static_cast<size_t>(max_to_keep_)) {
      DeleteCheckpointFiles(checkpoints_.front());
      checkpoints_.erase(checkpoints_.begin());
      timestamps_.erase(timestamps_.begin());
    }
    SLUICE_RETURN_IF_ERROR(RecordState());
  }
  return path;
}

}  // namespace sluice::nn
