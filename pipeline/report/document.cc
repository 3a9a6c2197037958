#include "report/document.h"

#include <fmt/format.h>

namespace wattcal {
namespace {

// ---- HTML ------------------------------------------------------------------------------------

std::string Html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string HtmlInline(const Inline& spans) {
  std::string out;
  for (const Span& s : spans) {
    std::string text = Html(s.text);
    if (s.code) text = "<code>" + text + "</code>";
    if (!s.href.empty()) text = "<a href=\"" + Html(s.href) + "\">" + text + "</a>";
    out += text;
  }
  return out;
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;line-height:1.4;"
    "color:#222}\n"
    "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}\n"
    "th,td{border:1px solid #ccc;padding:0.25em 0.5em;vertical-align:top}\n"
    "th{background:#f2f2f2}\ntd.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "figure{margin:1.5em 0}\nfigure img{max-width:100%;height:auto;border:1px solid #eee}\n"
    "figcaption{font-size:0.9em;color:#444}\ncode{font-size:0.9em}\n"
    "pre{background:#f7f7f7;padding:0.75em;overflow-x:auto;font-size:0.85em}\n";

}  // namespace

std::string RenderHtml(const Document& doc, const std::string& title) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>" + Html(title) + "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n";
  for (const Block& b : doc.blocks()) {
    switch (b.kind) {
      case Block::Kind::kHeading:
        out += fmt::format("<h{}{}>{}</h{}>\n", b.level,
                           b.id.empty() ? "" : " id=\"" + Html(b.id) + "\"", HtmlInline(b.text),
                           b.level);
        break;
      case Block::Kind::kParagraph: out += "<p>" + HtmlInline(b.text) + "</p>\n"; break;
      case Block::Kind::kList:
        out += "<ul>\n";
        for (const Inline& item : b.items) out += "<li>" + HtmlInline(item) + "</li>\n";
        out += "</ul>\n";
        break;
      case Block::Kind::kTable:
        out += "<table>\n<tr>";
        for (const std::string& h : b.header) out += "<th>" + Html(h) + "</th>";
        out += "</tr>\n";
        for (const auto& row : b.rows) {
          out += "<tr>";
          for (size_t i = 0; i < row.size(); ++i) {
            out += (i < b.numeric.size() && b.numeric[i] ? "<td class=\"n\">" : "<td>") +
                   HtmlInline(row[i]) + "</td>";
          }
          out += "</tr>\n";
        }
        out += "</table>\n";
        break;
      case Block::Kind::kFigure:
        out += "<figure>\n<a href=\"" + Html(b.svg) + "\"><img src=\"" + Html(b.png) + "\" alt=\"" +
               Html(b.alt) + "\" width=\"800\" height=\"600\"></a>\n<figcaption>" +
               HtmlInline(b.text) + " (<a href=\"" + Html(b.svg) + "\">SVG</a>)</figcaption>\n" +
               "</figure>\n";
        break;
      case Block::Kind::kCode: out += "<pre><code>" + Html(b.code) + "</code></pre>\n"; break;
    }
  }
  out += "</body>\n</html>\n";
  return out;
}

// ---- Markdown ----------------------------------------------------------------------------------

// Escapes the characters that would start Markdown markup inside running text.
namespace {

std::string MdText(const std::string& text, bool in_table) {
  std::string out;
  for (char c : text) {
    if (c == '|' && in_table) {
      out += "\\|";
    } else if (c == '*' || c == '_' || c == '[' || c == ']' || c == '`' || c == '<') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

std::string MdInline(const Inline& spans, bool in_table = false) {
  std::string out;
  for (const Span& s : spans) {
    std::string text = s.code ? "`" + s.text + "`" : MdText(s.text, in_table);
    if (s.code && in_table) {
      std::string escaped;
      for (char c : text) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
      text = escaped;
    }
    if (!s.href.empty()) {
      std::string href;
      for (char c : s.href)
        href += c == ' ' ? std::string("%20") : c == ')' ? std::string("%29") : std::string(1, c);
      text = "[" + text + "](" + href + ")";
    }
    out += text;
  }
  return out;
}

}  // namespace

std::string RenderMarkdown(const Document& doc) {
  std::string out;
  for (const Block& b : doc.blocks()) {
    switch (b.kind) {
      case Block::Kind::kHeading:
        out += std::string(static_cast<size_t>(b.level), '#') + " " + MdInline(b.text) + "\n\n";
        break;
      case Block::Kind::kParagraph: out += MdInline(b.text) + "\n\n"; break;
      case Block::Kind::kList:
        for (const Inline& item : b.items) out += "- " + MdInline(item) + "\n";
        out += "\n";
        break;
      case Block::Kind::kTable: {
        out += "|";
        for (const std::string& h : b.header) out += " " + MdText(h, true) + " |";
        out += "\n|";
        for (size_t i = 0; i < b.header.size(); ++i) out += b.numeric[i] ? "---:|" : "---|";
        out += "\n";
        for (const auto& row : b.rows) {
          out += "|";
          for (const Inline& cell : row) out += " " + MdInline(cell, true) + " |";
          out += "\n";
        }
        out += "\n";
        break;
      }
      case Block::Kind::kFigure:
        out += "[![" + MdText(b.alt, false) + "](" + b.png + ")](" + b.svg + ")\n\n*" +
               MdInline(b.text) + "* ([SVG](" + b.svg + "))\n\n";
        break;
      case Block::Kind::kCode: out += "```json\n" + b.code + "\n```\n\n"; break;
    }
  }
  while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n')
    out.pop_back();
  return out;
}

}  // namespace wattcal
