#include "util/text_input.h"

namespace wattcal {

bool StripUtf8ByteOrderMark(std::string* text) {
  if (text->compare(0, kUtf8ByteOrderMark.size(), kUtf8ByteOrderMark) != 0) return false;
  text->erase(0, kUtf8ByteOrderMark.size());
  return true;
}

std::string_view StripUtf8ByteOrderMark(std::string_view text) {
  if (text.substr(0, kUtf8ByteOrderMark.size()) == kUtf8ByteOrderMark) {
    text.remove_prefix(kUtf8ByteOrderMark.size());
  }
  return text;
}

void SkipUtf8ByteOrderMark(const char** data, size_t* size) {
  const std::string_view stripped = StripUtf8ByteOrderMark(std::string_view(*data, *size));
  *data = stripped.data();
  *size = stripped.size();
}

}  // namespace wattcal
