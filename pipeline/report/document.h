// A report page as one document model with two renderers, HTML and Markdown, so that the two
// pages of a report always say the same (report/run_report.h's index, the clocks report).
//
//   Document doc;
//   doc.Heading(2, "Power across clocks", "power");
//   doc.Table({"workload", "MAPE (%)"}, {false, true}, rows);
//   files: RenderHtml(doc, title) and RenderMarkdown(doc)
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace wattcal {

// ---- Document model ---------------------------------------------------------------------------

struct Span {
  std::string text;
  std::string href;  // "" = plain text
  bool code = false;
};
using Inline = std::vector<Span>;

inline Inline Text(const std::string& text) { return {Span{text, "", false}}; }

struct Block {
  enum class Kind { kHeading, kParagraph, kList, kTable, kFigure, kCode };
  Kind kind = Kind::kParagraph;
  int level = 2;                          // heading
  std::string id;                         // heading anchor
  Inline text;                            // heading, paragraph, figure caption
  std::vector<Inline> items;              // list
  std::vector<std::string> header;        // table
  std::vector<bool> numeric;              // table: right-aligned columns
  std::vector<std::vector<Inline>> rows;  // table
  std::string png, svg, alt;              // figure (hrefs)
  std::string code;                       // code block (JSON)
};

class Document {
 public:
  void Heading(int level, const std::string& text, const std::string& id = "") {
    Block b;
    b.kind = Block::Kind::kHeading;
    b.level = level;
    b.id = id;
    b.text = Text(text);
    blocks_.push_back(std::move(b));
  }
  void Paragraph(Inline text) {
    Block b;
    b.kind = Block::Kind::kParagraph;
    b.text = std::move(text);
    blocks_.push_back(std::move(b));
  }
  void List(std::vector<Inline> items) {
    if (items.empty()) return;
    Block b;
    b.kind = Block::Kind::kList;
    b.items = std::move(items);
    blocks_.push_back(std::move(b));
  }
  void Table(std::vector<std::string> header, std::vector<bool> numeric,
             std::vector<std::vector<Inline>> rows) {
    Block b;
    b.kind = Block::Kind::kTable;
    b.header = std::move(header);
    b.numeric = std::move(numeric);
    b.numeric.resize(b.header.size(), false);
    b.rows = std::move(rows);
    blocks_.push_back(std::move(b));
  }
  void Figure(const std::string& png, const std::string& svg, const std::string& alt,
              Inline caption) {
    Block b;
    b.kind = Block::Kind::kFigure;
    b.png = png;
    b.svg = svg;
    b.alt = alt;
    b.text = std::move(caption);
    blocks_.push_back(std::move(b));
  }
  void Code(const std::string& code) {
    Block b;
    b.kind = Block::Kind::kCode;
    b.code = code;
    blocks_.push_back(std::move(b));
  }
  const std::vector<Block>& blocks() const { return blocks_; }

 private:
  std::vector<Block> blocks_;
};

// Link target of `path` relative to the output folder; "" when the file does not exist.
class Linker {
 public:
  explicit Linker(const std::string& out_dir)
      : out_dir_(std::filesystem::absolute(out_dir.empty() ? "." : out_dir).lexically_normal()) {}

  std::string Href(const std::string& path) const {
    std::error_code ec;
    if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return "";
    return std::filesystem::absolute(path)
        .lexically_normal()
        .lexically_relative(out_dir_)
        .generic_string();
  }
  Span Link(const std::string& text, const std::string& path) const {
    return {text, Href(path), false};
  }
  Span File(const std::string& path) const { return {path, Href(path), true}; }

 private:
  std::filesystem::path out_dir_;
};

// The whole page: a standalone HTML file with its style sheet, titled `title`.
std::string RenderHtml(const Document& doc, const std::string& title);
// The same blocks as GitHub-flavoured Markdown.
std::string RenderMarkdown(const Document& doc);

}  // namespace wattcal
