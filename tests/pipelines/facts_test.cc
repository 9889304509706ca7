#include "ellm/pipelines/facts.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "ellm/pipelines/provenance.h"

namespace ellm::pipelines {
namespace {

std::vector<std::string> Normalized(std::string_view text) {
  std::vector<std::string> out;
  for (const Fact& f : FindFacts(text)) out.push_back(f.Normalized());
  return out;
}

using V = std::vector<std::string>;

PipelineSpec::Field MakeField(std::string name, FactKind type, std::vector<std::string> keys = {}) {
  PipelineSpec::Field f;
  f.name = name;
  f.label = name;
  f.type = type;
  f.keywords = std::move(keys);
  return f;
}

TEST(Facts, AmountsInEverySpellingNormaliseAlike) {
  EXPECT_EQ(Normalized("Revenue rose 12% to EUR 4.2 billion."), (V{"12%", "EUR 4200000000"}));
  EXPECT_EQ(Normalized("4,200 million euros"), V{"EUR 4200000000"});
  EXPECT_EQ(Normalized("\xE2\x82\xAC"
                       "4.2bn"),
            V{"EUR 4200000000"});
  EXPECT_EQ(Normalized("USD 96m, $ 1,250,000 and GBP 3.5 mn"),
            (V{"USD 96000000", "USD 1250000", "GBP 3500000"}));
  EXPECT_EQ(Normalized("a dividend of EUR 0.84 per share"), V{"EUR 0.84"});
  EXPECT_EQ(Normalized("610 million"), V{"610000000"});
  EXPECT_EQ(Normalized("two million pounds"), V{"GBP 2000000"});
}

TEST(Facts, PercentsNumbersAndWordsApart) {
  EXPECT_EQ(Normalized("50 %, 7.5 percent and 3 per cent"), (V{"50%", "7.5%", "3%"}));
  EXPECT_EQ(Normalized("12 wind turbines of type NX-5, ratio 2.1"), (V{"12", "5", "2.1"}));
  // Small counts in words are no figures; with a unit they are durations.
  EXPECT_EQ(Normalized("two manufacturers and three months"), V{"3 months"});
  EXPECT_EQ(Normalized("ninety (90) days written notice"), V{"90 days"});
  EXPECT_EQ(Normalized("within 30 business days or 1 year"), (V{"30 days", "1 year"}));
}

TEST(Facts, DatesInCommonFormats) {
  EXPECT_EQ(Normalized("by 30 June 2026."), V{"2026-06-30"});
  EXPECT_EQ(Normalized("on June 30, 2026"), V{"2026-06-30"});
  EXPECT_EQ(Normalized("the 3rd of March, 2025"), V{"2025-03-03"});
  EXPECT_EQ(Normalized("2026-06-30 or 30/06/2026 or 30.06.2026 or 06/30/2026"),
            (V{"2026-06-30", "2026-06-30", "2026-06-30", "2026-06-30"}));
  EXPECT_EQ(Normalized("payable in May 2026"), V{"2026-05"});
  EXPECT_EQ(Normalized("31 Dec. 2026"), V{"2026-12-31"});
  // No day 32, no month 13: not a date; its parts are numbers.
  EXPECT_EQ(Normalized("32/13/2026"), (V{"32", "13", "2026"}));
  // Days past the month's end are no day of it (2028 is a leap year).
  EXPECT_EQ(Normalized("31 February 2026"), (V{"31", "2026-02"}));
  EXPECT_EQ(Normalized("29/02/2028 and 29/02/2026"), (V{"2028-02-29", "29", "2", "2026"}));
}

TEST(Facts, SameValueAcrossSpellingsOnly) {
  auto one = [](std::string_view t) { return FindFacts(t).at(0); };
  EXPECT_TRUE(SameValue(one("EUR 4.2 billion"), one("4,200 million euros")));
  EXPECT_TRUE(SameValue(one("96 million"), one("EUR 96 million")));  // currency unsaid
  EXPECT_FALSE(SameValue(one("USD 96 million"), one("EUR 96 million")));
  EXPECT_FALSE(SameValue(one("96"), one("EUR 96 million")));
  EXPECT_TRUE(SameValue(one("2 weeks"), one("14 days")));
  EXPECT_TRUE(SameValue(one("1 year"), one("12 months")));
  EXPECT_FALSE(SameValue(one("90 days"), one("3 months")));
  EXPECT_FALSE(SameValue(one("50%"), one("50")));
  EXPECT_TRUE(SameValue(one("June 30, 2026"), one("30/06/2026")));
}

TEST(Facts, AFigureIsStatedInAnySpellingAndAYearByADateInIt) {
  auto one = [](std::string_view t) { return FiguresIn(t).at(0); };
  const std::vector<Fact> stated = StatedValues(
      "Twelve terminals; revenue of 1,000 million in the year ended 31 December "
      "2019, up 8 percent.");
  EXPECT_TRUE(StatesFigure(stated, one("EUR 1000 million")));
  EXPECT_TRUE(StatesFigure(stated, one("12 terminals")));  // spelled out in the source
  EXPECT_TRUE(StatesFigure(stated, one("2019-12-31")));
  EXPECT_TRUE(StatesFigure(stated, one("in 2019")));           // a year: a date in it
  EXPECT_TRUE(StatesFigure(stated, one("in December 2019")));  // a month: a day in it
  EXPECT_TRUE(StatesFigure(stated, one("8%")));
  EXPECT_FALSE(StatesFigure(stated, one("in 2020")));
  EXPECT_FALSE(StatesFigure(stated, one("30 December 2019")));
  EXPECT_FALSE(StatesFigure(stated, one("9 percent")));
  // More precise than the source is not stated: "2019" says no day.
  EXPECT_FALSE(StatesFigure(StatedValues("in 2019"), one("31 December 2019")));
}

TEST(Facts, FirstFactOfAFieldType) {
  auto value = [](FactKind k, std::string_view t) {
    auto f = FirstFactOf(k, t);
    return f ? std::string(t.substr(f->begin, f->end - f->begin)) : std::string("<none>");
  };
  EXPECT_EQ(value(FactKind::kPercent, " 100% of the total price, except for death"), "100%");
  EXPECT_EQ(value(FactKind::kPercent, " EUR 118 million, including"), "<none>");
  EXPECT_EQ(value(FactKind::kNumber, " limited to 14."), "14");
  EXPECT_EQ(value(FactKind::kNumber, "twelve turbines"), "twelve");
  EXPECT_EQ(value(FactKind::kAmount, " EUR 96 million."), "EUR 96 million");
  EXPECT_EQ(value(FactKind::kDate, " 31 December 2026."), "31 December 2026");
  EXPECT_EQ(value(FactKind::kDuration, " 30 days from the date"), "30 days");
  EXPECT_EQ(value(FactKind::kText, " England and Wales. "), "England and Wales");
  EXPECT_EQ(value(FactKind::kText, " . "), "<none>");
}

// Model output and document text are arbitrary bytes: whatever comes in,
// every fact lies inside the text, in order, and nothing crashes.
TEST(Facts, ArbitraryBytesGiveInBoundsFactsOnly) {
  std::vector<std::string> inputs = {"",
                                     "EUR",
                                     "$",
                                     "30/",
                                     "June",
                                     "1,",
                                     "1,00",
                                     "12.",
                                     "31 February 2026",
                                     "99999999999999999999999999 billion euros",
                                     "\xE2\x82",
                                     "\xE2\x82\xAC",
                                     "[page 2] [p. 3",
                                     "ninety (",
                                     "2026-13-45 and 00/00/0000"};
  uint64_t x = 88172645463325252ull;
  for (int n = 0; n < 300; ++n) {
    std::string r;
    for (int i = 0; i < 1 + n % 40; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      // Digits, separators, currency bytes and letters of month names.
      static const char kAlphabet[] = "0123456789 ,./-%$EURJunedays\xE2\x82\xAC\xC2\xA3()";
      r += kAlphabet[x % (sizeof(kAlphabet) - 1)];
    }
    inputs.push_back(r);
  }
  for (const std::string& t : inputs) {
    size_t last = 0;
    for (const Fact& f : FindFacts(t)) {
      EXPECT_LE(last, f.begin) << t;
      EXPECT_LT(f.begin, f.end) << t;
      EXPECT_LE(f.end, t.size()) << t;
      last = f.end;
    }
    for (FactKind k : {FactKind::kText, FactKind::kAmount, FactKind::kDate, FactKind::kNumber}) {
      if (auto f = FirstFactOf(k, t)) {
        EXPECT_LE(f->end, t.size()) << t;
      }
    }
    const auto pages = SplitPages(t);
    for (const Fact& f : FindFacts(t)) Locate(f, t.substr(f.begin, f.end - f.begin), pages);
    VerifyFigureLines(t, pages);
    // Role binding over the same bytes: any fragment as a party's name.
    const PipelineSpec::Field party = MakeField("party", FactKind::kText, {"eur", "june"});
    for (size_t n : {size_t{1}, size_t{3}, t.size()}) BoundRoles({party}, t.substr(0, n), pages);
  }
}

const char kContract[] =
    "[page 1]\nSupply Agreement\n\nThe Supplier shall deliver 12 wind turbines to the Buyer's "
    "sites in Spain.\n\nThe Buyer shall pay a total price of EUR 96 million.\n\n[page 2]\n"
    "Termination\n\nEither party may terminate with 30 days written notice.\n\nThis Agreement is "
    "governed by the laws of Spain.\n";

TEST(Facts, SplitPagesAtMarkers) {
  auto pages = SplitPages(kContract);
  ASSERT_EQ(pages.size(), 2u);
  EXPECT_EQ(pages[0].number, 1);
  EXPECT_EQ(pages[1].number, 2);
  EXPECT_EQ(pages[1].text.rfind("Termination", 0), 0u);
  auto plain = SplitPages("no markers\nat all\n");
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].number, 0);
}

TEST(Facts, LocatePrefersTheParagraphWithAKeyword) {
  auto pages = SplitPages(kContract);
  Fact text;  // kText
  auto law = Locate(text, "spain", pages, {"governed", "law"});
  ASSERT_TRUE(law);
  EXPECT_EQ(law->page, 2);
  EXPECT_EQ(law->text, "Spain");
  auto first = Locate(text, "Spain", pages);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->page, 1);
  auto price = Locate(FindFacts("96,000,000 EUR").at(0), "", pages);
  ASSERT_TRUE(price);
  EXPECT_EQ(price->page, 1);
  EXPECT_EQ(price->text, "EUR 96 million");
  EXPECT_FALSE(Locate(FindFacts("EUR 97 million").at(0), "", pages));
  EXPECT_FALSE(Locate(text, "Portugal", pages));
  EXPECT_FALSE(Locate(text, "Spa", pages));  // whole words only
}

TEST(Provenance, ComparisonIsComputedAndCitesEachSide) {
  const std::string b_text = std::string(kContract);
  std::string a_text = b_text;
  a_text.replace(a_text.find("EUR 96 million"), 14, "EUR 118 million");
  const auto pa = SplitPages(a_text), pb = SplitPages(b_text);
  std::vector<PipelineSpec::Field> fields = {
      MakeField("price", FactKind::kAmount), MakeField("law", FactKind::kText, {"governed"}),
      MakeField("notice", FactKind::kDuration), MakeField("cap", FactKind::kPercent)};
  std::vector<FieldValue> a = {
      ResolveField(fields[0], " EUR 118 million.", pa), ResolveField(fields[1], " Spain.", pa),
      ResolveField(fields[2], " thirty days", pa), ResolveField(fields[3], " the total price", pa)};
  std::vector<FieldValue> b = {ResolveField(fields[0], " 96 million euros", pb),
                               ResolveField(fields[1], " spain, as agreed", pb),
                               ResolveField(fields[2], " 30 days.", pb),
                               ResolveField(fields[3], " 50%", pb)};
  EXPECT_TRUE(a[0].verified());
  EXPECT_EQ(b[0].source->text, "EUR 96 million");  // the document's spelling
  EXPECT_EQ(CompareField(a[0], b[0]), Agreement::kDifferent);
  EXPECT_EQ(CompareField(a[1], b[1]), Agreement::kSame);
  EXPECT_EQ(a[1].source->page, 2);
  EXPECT_EQ(CompareField(a[3], b[3]), Agreement::kOnlyInB);
  EXPECT_FALSE(b[3].verified());  // 50% is nowhere in B
  const std::string table = RenderComparisonTable(fields, a, b);
  EXPECT_NE(table.find("| price | EUR 118 million (A p.1) | EUR 96 million (B p.1) | different |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| law | Spain (A p.2) | Spain (B p.2) | same |"), std::string::npos);
  EXPECT_NE(table.find("| cap | — | 50% (unverified) | only in B |"), std::string::npos);
  // "thirty days" in words is the 30 days B states in digits.
  EXPECT_EQ(CompareField(a[2], b[2]), Agreement::kSame);
  EXPECT_EQ(a[2].normalized, "30 days");
  auto json = FieldsJson(fields, b);
  EXPECT_EQ(json["price"]["page"], 1);
  EXPECT_EQ(json["price"]["normalized"], "EUR 96000000");
  EXPECT_EQ(json["cap"]["verified"], false);
  EXPECT_TRUE(json["cap"]["page"].is_null());
}

TEST(Provenance, TheDocumentsDefinedTermsDecideWhichPartyIsWhich) {
  const auto pages = SplitPages(
      "[page 1]\nThis Supply Agreement is made between Northwind Energy\nplc (the Buyer) and "
      "Aero Turbines SA (hereinafter referred to as “the Supplier”) on 3 March 2025.\n"
      "[page 2]\nNotices to Northwind Energy plc go to its London office. Carrier: Iberia "
      "Wind SL.\nSeller: Vento Systems SpA, as agent.\n");
  std::vector<PipelineSpec::Field> fields = {
      MakeField("buyer", FactKind::kText, {"buyer"}),
      MakeField("supplier", FactKind::kText, {"supplier", "seller"}),
      MakeField("carrier", FactKind::kText, {"carrier"}),
      MakeField("date", FactKind::kDate, {"made"})};
  EXPECT_EQ(BoundRoles(fields, "Northwind Energy plc", pages), std::vector<size_t>{0});
  EXPECT_EQ(BoundRoles(fields, "aero turbines sa", pages), std::vector<size_t>{1});
  EXPECT_EQ(BoundRoles(fields, "Iberia Wind SL", pages), std::vector<size_t>{2});  // "Carrier: "
  EXPECT_EQ(BoundRoles(fields, "Vento Systems SpA", pages), std::vector<size_t>{1});
  EXPECT_TRUE(BoundRoles(fields, "London", pages).empty());
  // The model named the parties the wrong way round: they swap, both noted.
  std::vector<FieldValue> v = {ResolveField(fields[0], " Aero Turbines SA.", pages),
                               ResolveField(fields[1], " Northwind Energy plc", pages),
                               ResolveField(fields[2], " Iberia Wind SL", pages),
                               ResolveField(fields[3], " 3 March 2025", pages)};
  EXPECT_EQ(BindRoles(fields, &v, pages), 1);
  EXPECT_EQ(v[0].normalized, "northwind energy plc");
  EXPECT_EQ(v[1].normalized, "aero turbines sa");
  EXPECT_TRUE(v[0].verified() && v[1].verified() && v[2].verified());
  EXPECT_NE(v[0].role_note.find("swapped with supplier"), std::string::npos) << v[0].role_note;
  EXPECT_TRUE(v[2].role_note.empty());
  // Correct answers are left alone.
  EXPECT_EQ(BindRoles(fields, &v, pages), 0);
  EXPECT_EQ(v[0].normalized, "northwind energy plc");
  // One answer bound to another role, with no swap partner: kept, flagged.
  v[2] = ResolveField(fields[2], " Vento Systems SpA", pages);
  EXPECT_EQ(BindRoles(fields, &v, pages), 0);
  EXPECT_EQ(v[2].normalized, "vento systems spa");
  EXPECT_TRUE(v[2].role_conflict);
  EXPECT_FALSE(v[2].verified());
  const std::string table = RenderFieldsTable(fields, v);
  EXPECT_NE(table.find("| carrier | Vento Systems SpA (unverified: the document names Vento "
                       "Systems SpA the supplier) |"),
            std::string::npos)
      << table;
  // "the Supplier" is a role word, not a name: no value.
  v[1] = ResolveField(fields[1], " the Supplier.", pages);
  EXPECT_TRUE(v[1].present());
  BindRoles(fields, &v, pages);
  EXPECT_FALSE(v[1].present());
  EXPECT_NE(v[1].role_note.find("names a role"), std::string::npos);
  auto json = FieldsJson(fields, v);
  EXPECT_EQ(json["carrier"]["verified"], false);
  EXPECT_TRUE(json["carrier"].contains("role"));
  EXPECT_TRUE(json["buyer"].contains("role"));
}

// A small model's answer runs on into the next field ("... (the Buyer) and
// the name of the Supplier is ..."): the answer is cut where it does, and
// never inside a value's own words.
TEST(Provenance, AnAnswerStopsWhereItNamesAnotherField) {
  std::vector<PipelineSpec::Field> f = {
      MakeField("buyer", FactKind::kText, {"buyer"}),
      MakeField("supplier", FactKind::kText, {"supplier", "seller"}),
      MakeField("quantity", FactKind::kNumber, {"deliver", "quantity"}),
      MakeField("price", FactKind::kAmount, {"price", "pay"}),
      MakeField("cap", FactKind::kPercent, {"liability", "liable"}),
      MakeField("law", FactKind::kText, {"governed", "law"})};
  for (PipelineSpec::Field& field : f) {
    field.lead = "According to the contract, the " + field.name + " is";
  }
  EXPECT_EQ(OwnAnswer(f, 0,
                      " Northwind Energy plc (the Buyer) and the name of the Supplier is Aero "
                      "Turbines SA (the Supplier)"),
            " Northwind Energy plc (the Buyer)");
  EXPECT_EQ(OwnAnswer(f, 1, " Aero Turbines SA, and the Buyer is Northwind Energy plc"),
            " Aero Turbines SA");
  EXPECT_EQ(OwnAnswer(f, 3, " EUR 96 million; the Supplier's total liability is limited to 100%"),
            " EUR 96 million");
  // A lead begun again, in any case.
  EXPECT_EQ(OwnAnswer(f, 5, " Spain. according to the Contract, the cap is 100%"), " Spain");
  // The field's own words, and words that name no field, stay.
  for (auto [i, answer] : std::vector<std::pair<size_t, std::string>>{
           {1, " Aero Turbines SA (the Supplier), and the Seller shall deliver them"},
           {2, " 12 wind turbines, to be delivered by 30 June 2026"},
           {4, " 100% of the total price, except for death, personal injury or fraud"},
           {5, " England and Wales"},
           {0, " Smith and Jones Ltd"},
           {0, ""}}) {
    EXPECT_EQ(OwnAnswer(f, i, answer), answer) << f[i].name;
  }
  // What is left resolves to the field's own value.
  const auto pages = SplitPages(
      "[page 1]\nNorthwind Energy plc (the Buyer) buys from Aero "
      "Turbines SA (the Supplier).\n");
  FieldValue v = ResolveField(
      f[0], OwnAnswer(f, 0, " Northwind Energy plc (the Buyer) and the name of the Supplier is X"),
      pages);
  EXPECT_EQ(v.answer, "Northwind Energy plc (the Buyer)");
  EXPECT_EQ(v.value, "Northwind Energy plc");
  EXPECT_TRUE(v.verified());
}

TEST(Provenance, FigureLinesAreCitedOrRemoved) {
  const auto pages = SplitPages(
      "[page 1]\nAbout us\n\n[page 2]\nRevenue rose 12% to EUR 4.2 billion. Net debt fell to "
      "EUR 1.9 billion.\n\n[page 3]\nThe dividend is EUR 0.84 per share, payable in May 2026.\n");
  auto check = VerifyFigureLines(
      "- Revenue: 4,200 million euros, up 12% [page 9]\n- Net debt: EUR 1.9 billion\n"
      "- Profit: EUR 700 million\n- [page 4]\n- Dividend: EUR 0.84 (May 2026)\n- Strong year",
      pages);
  EXPECT_EQ(check.text,
            "- Revenue: 4,200 million euros, up 12% [p. 2]\n- Net debt: EUR 1.9 billion [p. 2]\n"
            "- Dividend: EUR 0.84 (May 2026) [p. 3]\n- Strong year");
  ASSERT_EQ(check.unverified.size(), 1u);
  EXPECT_EQ(check.unverified[0], "- Profit: EUR 700 million");
  EXPECT_EQ(check.figures_total, 6);
  EXPECT_EQ(check.figures_found, 5);
  EXPECT_EQ(check.citations.size(), 3u);
}

TEST(Provenance, MergedFigureLinesKeepTheFirstPagesFigures) {
  // The reduce step kept the last notes' figures; the map steps' lines
  // with other figures join, in page order, without repeats, capped.
  const std::string merged = MergeFigureLines(
      "- Capacity: 3112 MW [p. 80]\n- Revenue was EUR 4.2 billion [p. 2]",
      {"- Revenue: 4,200 million euros [p. 2]", "- Net debt: EUR 1.9 billion [p. 2]",
       "- Capacity: 3112 MW [p. 80]", "- Dividend: EUR 0.84 [p. 3]", "- Staff: 900 [p. 9]"},
      4);
  EXPECT_EQ(merged,
            "- Revenue was EUR 4.2 billion [p. 2]\n- Net debt: EUR 1.9 billion [p. 2]\n"
            "- Dividend: EUR 0.84 [p. 3]\n- Staff: 900 [p. 9]");
}

TEST(Provenance, ProseKeepsOnlySentencesWithKnownFigures) {
  int dropped = 0;
  std::string kept = KeepSupportedSentences(
      "B costs EUR 118 million, more than A. B also adds a EUR 5 million bonus. Both are "
      "governed by Spanish law.",
      "- price: EUR 96 million in A, EUR 118 million in B.\n", &dropped);
  EXPECT_EQ(kept, "B costs EUR 118 million, more than A. Both are governed by Spanish law.");
  EXPECT_EQ(dropped, 1);
}

}  // namespace
}  // namespace ellm::pipelines
