// CSV text cells: quoting, and no formula a spreadsheet would run (issue 27 item 12).
#include <gtest/gtest.h>

#include "util/text.hpp"

using opmeter::csv_field;

TEST(CsvField, QuotesCommasQuotesAndLineBreaks) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
}

TEST(CsvField, TextThatStartsAFormulaGetsALeadingQuote) {
  EXPECT_EQ(csv_field("=SUM(A1:A9)"), "'=SUM(A1:A9)");
  EXPECT_EQ(csv_field("+cmd|' /C calc'!A0"), "'+cmd|' /C calc'!A0");
  EXPECT_EQ(csv_field("-x"), "'-x");
  EXPECT_EQ(csv_field("@SUM(1)"), "'@SUM(1)");
  EXPECT_EQ(csv_field("\t=1"), "'\t=1");
  EXPECT_EQ(csv_field("=1,2"), "\"'=1,2\"");  // quoted after the prefix
}

TEST(CsvField, PlainNumbersStayNumbers) {
  for (const char* n : {"-5", "-1.5", "+2", "-3e-4", "-.5", "0", "12"}) EXPECT_EQ(csv_field(n), n);
  EXPECT_EQ(csv_field("-5-5"), "'-5-5");
  EXPECT_EQ(csv_field("-1e"), "'-1e");
  EXPECT_EQ(csv_field("-"), "-");  // a case without params
}
