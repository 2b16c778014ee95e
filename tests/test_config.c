/* config: units, YAML loaders with located errors, shipped data, parameter counts,
 * calibration and jobs. Fixtures live in tests/data/config/; SPSIM_DATA_DIR is the
 * source root (set by tests/meson.build). */
#include "config/config.h"
#include "config/ranges.h"
#include "config/yamltree.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- helpers --- */

static void assert_close(double got, double want, double rel)
{
	ck_assert_msg(fabs(got - want) <= rel * fabs(want), "got %.17g, want %.17g (relative tolerance %g)", got,
		      want, rel);
}

static void fixture(char *buf, size_t len, const char *name)
{
	const char *root = getenv("SPSIM_DATA_DIR");
	ck_assert_ptr_nonnull(root);
	snprintf(buf, len, "%s/tests/data/config/%s", root, name);
}

static double qty(const char *text, config_unit_kind kind)
{
	config_error e = {""};
	double v = 0;
	ck_assert_msg(config_parse_quantity(text, kind, &v, &e), "'%s': %s", text, e.msg);
	return v;
}

static const char *qty_error(const char *text, config_unit_kind kind)
{
	static config_error e; /* test-local; each Check test runs in its own process */
	double v = -1;
	e.msg[0] = '\0';
	ck_assert_msg(!config_parse_quantity(text, kind, &v, &e), "'%s' was accepted as %g", text, v);
	ck_assert_msg(v == -1, "output written on failure");
	return e.msg;
}

enum loader { MODEL, PLATFORM, CALIBRATION, JOB };

/* Loads fixture `name` and checks the error is exactly "<path>:<where_msg>". */
static void expect_error(enum loader which, const char *name, const char *where_msg)
{
	char path[CONFIG_PATH_MAX], want[CONFIG_ERROR_MAX + CONFIG_PATH_MAX];
	fixture(path, sizeof path, name);
	snprintf(want, sizeof want, "%s:%s", path, where_msg);
	config_error e = {""};
	bool ok = true;
	config_model m;
	config_platform p;
	config_calibration c;
	config_job j;
	switch (which) {
	case MODEL: ok = config_load_model(path, &m, &e); break;
	case PLATFORM: ok = config_load_platform(path, &p, &e); break;
	case CALIBRATION: ok = config_load_calibration(path, &c, &e); break;
	case JOB:
		config_job_defaults(&j);
		ok = config_load_job(path, &j, NULL, NULL, NULL, NULL, &e);
		break;
	}
	ck_assert_msg(!ok, "%s loaded without error", name);
	ck_assert_str_eq(e.msg, want);
}

static config_model load_model(const char *name)
{
	config_model m;
	config_error e = {""};
	ck_assert_msg(config_load_model(name, &m, &e), "%s: %s", name, e.msg);
	return m;
}

static config_platform load_platform(const char *name)
{
	config_platform p;
	config_error e = {""};
	ck_assert_msg(config_load_platform(name, &p, &e), "%s: %s", name, e.msg);
	return p;
}

static config_platform load_platform_fixture(const char *name)
{
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, name);
	return load_platform(path);
}

/* --------------------------------------------------------------- units --- */

START_TEST(units_bandwidth)
{
	/* Lowercase b = bits: 400 Gb/s / 8 = 50e9 B/s. */
	assert_close(qty("400Gbps", CONFIG_UNIT_BANDWIDTH), 50e9, 1e-15);
	assert_close(qty("400Gb/s", CONFIG_UNIT_BANDWIDTH), 50e9, 1e-15);
	assert_close(qty("50GB/s", CONFIG_UNIT_BANDWIDTH), 50e9, 1e-15);
	assert_close(qty("50 GB/s", CONFIG_UNIT_BANDWIDTH), 50e9, 1e-15);
	assert_close(qty("50GBps", CONFIG_UNIT_BANDWIDTH), 50e9, 1e-15);
	/* Binary prefix: 25 x 1024^3 = 26,843,545,600 B/s. */
	assert_close(qty("25GiB/s", CONFIG_UNIT_BANDWIDTH), 26843545600.0, 1e-15);
	assert_close(qty("100MB/s", CONFIG_UNIT_BANDWIDTH), 100e6, 1e-15);
	/* 1.6 Tb/s / 8 = 200e9 B/s. */
	assert_close(qty("1.6Tbps", CONFIG_UNIT_BANDWIDTH), 200e9, 1e-15);
	assert_close(qty("1TB/s", CONFIG_UNIT_BANDWIDTH), 1e12, 1e-15);
	assert_close(qty("200kb/s", CONFIG_UNIT_BANDWIDTH), 25e3, 1e-15);
}
END_TEST

START_TEST(units_time)
{
	assert_close(qty("2us", CONFIG_UNIT_TIME), 2e-6, 1e-15);
	assert_close(qty("2\xC2\xB5s", CONFIG_UNIT_TIME), 2e-6, 1e-15); /* U+00B5 MICRO SIGN */
	assert_close(qty("2\xCE\xBCs", CONFIG_UNIT_TIME), 2e-6, 1e-15); /* U+03BC GREEK SMALL LETTER MU */
	assert_close(qty("1.5ms", CONFIG_UNIT_TIME), 1.5e-3, 1e-15);
	assert_close(qty("700ns", CONFIG_UNIT_TIME), 700e-9, 1e-15);
	assert_close(qty("1s", CONFIG_UNIT_TIME), 1.0, 1e-15);
	assert_close(qty("2.5e1 us", CONFIG_UNIT_TIME), 25e-6, 1e-15);
}
END_TEST

START_TEST(units_size)
{
	/* 40 x 1024^3 = 42,949,672,960 B. */
	assert_close(qty("40GiB", CONFIG_UNIT_SIZE), 42949672960.0, 1e-15);
	assert_close(qty("80GB", CONFIG_UNIT_SIZE), 80e9, 1e-15);
	/* 512 x 1024^2 = 536,870,912 B. */
	assert_close(qty("512MiB", CONFIG_UNIT_SIZE), 536870912.0, 1e-15);
	assert_close(qty("4096B", CONFIG_UNIT_SIZE), 4096.0, 1e-15);
	assert_close(qty("1KiB", CONFIG_UNIT_SIZE), 1024.0, 1e-15);
	assert_close(qty("1kB", CONFIG_UNIT_SIZE), 1000.0, 1e-15);
	/* 8 Gb = 1 GB. */
	assert_close(qty("8Gb", CONFIG_UNIT_SIZE), 1e9, 1e-15);
}
END_TEST

START_TEST(units_flops)
{
	assert_close(qty("312TFLOPS", CONFIG_UNIT_FLOPS), 312e12, 1e-15);
	assert_close(qty("989 TFLOP/s", CONFIG_UNIT_FLOPS), 989e12, 1e-15);
	assert_close(qty("1.2PFLOPS", CONFIG_UNIT_FLOPS), 1.2e15, 1e-15);
	assert_close(qty("500GFLOPS", CONFIG_UNIT_FLOPS), 500e9, 1e-15);
}
END_TEST

START_TEST(units_rejections)
{
	ck_assert_str_eq(qty_error("400", CONFIG_UNIT_BANDWIDTH),
			 "'400' has no unit, expected a bandwidth such as 400Gbps or 50GB/s");
	ck_assert_str_eq(qty_error("2us", CONFIG_UNIT_BANDWIDTH),
			 "'2us' is a time, expected a bandwidth such as 400Gbps or 50GB/s");
	ck_assert_str_eq(qty_error("50GB/s", CONFIG_UNIT_TIME),
			 "'50GB/s' is a bandwidth, expected a time such as 2us or 1.5ms");
	ck_assert_str_eq(qty_error("40GiB", CONFIG_UNIT_FLOPS),
			 "'40GiB' is a size, expected a FLOP rate such as 312TFLOPS or 989TFLOP/s");
	ck_assert_str_eq(qty_error("312TFLOPS", CONFIG_UNIT_SIZE),
			 "'312TFLOPS' is a FLOP rate, expected a size such as 40GiB or 512MiB");
	ck_assert_str_eq(qty_error("-5GB/s", CONFIG_UNIT_BANDWIDTH),
			 "'-5GB/s' must be positive, expected a bandwidth such as 400Gbps or 50GB/s");
	ck_assert_str_eq(qty_error("0us", CONFIG_UNIT_TIME), "'0us' must be positive, expected a time such as 2us or 1.5ms");
	ck_assert_str_eq(qty_error("nanGB/s", CONFIG_UNIT_BANDWIDTH),
			 "'nanGB/s' is not a number with a unit, expected a bandwidth such as 400Gbps or 50GB/s");
	ck_assert_str_eq(qty_error("inf GB/s", CONFIG_UNIT_BANDWIDTH),
			 "'inf GB/s' is not a number with a unit, expected a bandwidth such as 400Gbps or 50GB/s");
	ck_assert_str_eq(qty_error("1e999GB/s", CONFIG_UNIT_BANDWIDTH),
			 "'1e999GB/s' is out of range, expected a bandwidth such as 400Gbps or 50GB/s");
	ck_assert_str_eq(qty_error("400Gbpsx", CONFIG_UNIT_BANDWIDTH),
			 "'400Gbpsx' has an unknown unit 'Gbpsx', expected a bandwidth such as 400Gbps or 50GB/s");
	ck_assert_str_eq(qty_error("2 us extra", CONFIG_UNIT_TIME),
			 "'2 us extra' has an unknown unit 'us extra', expected a time such as 2us or 1.5ms");
	ck_assert_str_eq(qty_error("GB/s", CONFIG_UNIT_BANDWIDTH),
			 "'GB/s' is not a number with a unit, expected a bandwidth such as 400Gbps or 50GB/s");
	ck_assert_str_eq(qty_error("", CONFIG_UNIT_SIZE), "'' is not a number with a unit, expected a size such as 40GiB or 512MiB");
	/* Hex floats are not numbers here: "0" then the unknown unit "x10GB/s". */
	ck_assert_str_eq(qty_error("0x10GB/s", CONFIG_UNIT_BANDWIDTH),
			 "'0x10GB/s' has an unknown unit 'x10GB/s', expected a bandwidth such as 400Gbps or 50GB/s");
	/* Case matters: "gb/s" and "Us" are not units; "mB/s" (milli) is not offered. */
	qty_error("50gb/s", CONFIG_UNIT_BANDWIDTH);
	qty_error("2Us", CONFIG_UNIT_TIME);
	qty_error("5mB/s", CONFIG_UNIT_BANDWIDTH);
	/* A NULL text reads as empty. */
	qty_error(NULL, CONFIG_UNIT_TIME);
}
END_TEST

START_TEST(units_names_and_format)
{
	ck_assert_str_eq(config_unit_name(CONFIG_UNIT_BANDWIDTH), "B/s");
	ck_assert_str_eq(config_unit_name(CONFIG_UNIT_TIME), "s");
	ck_assert_str_eq(config_unit_name(CONFIG_UNIT_SIZE), "B");
	ck_assert_str_eq(config_unit_name(CONFIG_UNIT_FLOPS), "FLOP/s");
	ck_assert_str_eq(config_unit_kind_name(CONFIG_UNIT_FLOPS), "FLOP rate");
	char buf[64];
	ck_assert_str_eq(config_format_quantity(50e9, CONFIG_UNIT_BANDWIDTH, buf, sizeof buf), "50 GB/s");
	ck_assert_str_eq(config_format_quantity(2.5e-6, CONFIG_UNIT_TIME, buf, sizeof buf), "2.5 us");
	ck_assert_str_eq(config_format_quantity(312e12, CONFIG_UNIT_FLOPS, buf, sizeof buf), "312 TFLOP/s");
	ck_assert_str_eq(config_format_quantity(4096, CONFIG_UNIT_SIZE, buf, sizeof buf), "4.096 kB");
	/* What the formatter writes, the parser reads back. */
	config_error e;
	double v;
	ck_assert(config_parse_quantity(config_format_quantity(50e9, CONFIG_UNIT_BANDWIDTH, buf, sizeof buf),
					CONFIG_UNIT_BANDWIDTH, &v, &e));
	assert_close(v, 50e9, 1e-15);
}
END_TEST

/* -------------------------------------------------------------- models --- */

/* docs/sources.md "Models" ([HF-*] config.json): L, h, a, g, d, ffn, V, tied; Qwen has
 * Q/K/V biases. max_position from each model's config.json (Qwen2.5-7B: 131072 with YaRN). */
static const struct {
	const char *name;
	int L, h, a, g, d, ffn, V;
	bool tied, bias;
	int max_pos;
} model_table[] = {
	{"llama-3.2-1b", 16, 2048, 32, 8, 64, 8192, 128256, true, false, 131072},
	{"llama-3.2-3b", 28, 3072, 24, 8, 128, 8192, 128256, true, false, 131072},
	{"llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 128256, false, false, 131072},
	{"llama-3.1-70b", 80, 8192, 64, 8, 128, 28672, 128256, false, false, 131072},
	{"qwen1.5-0.5b", 24, 1024, 16, 16, 64, 2816, 151936, true, true, 32768},
	{"qwen1.5-1.8b", 24, 2048, 16, 16, 128, 5504, 151936, false, true, 32768},
	{"qwen1.5-4b", 40, 2560, 20, 20, 128, 6912, 151936, false, true, 32768},
	{"qwen1.5-7b", 32, 4096, 32, 32, 128, 11008, 151936, false, true, 32768},
	{"qwen2.5-7b", 28, 3584, 28, 4, 128, 18944, 152064, false, true, 131072},
};
#define N_MODELS (int)(sizeof model_table / sizeof model_table[0])

START_TEST(model_shipped_loads)
{
	int i = _i;
	config_model m = load_model(model_table[i].name);
	ck_assert_str_eq(m.name, model_table[i].name);
	ck_assert_int_eq(m.layers, model_table[i].L);
	ck_assert_int_eq(m.hidden, model_table[i].h);
	ck_assert_int_eq(m.heads, model_table[i].a);
	ck_assert_int_eq(m.kv_heads, model_table[i].g);
	ck_assert_int_eq(m.head_dim, model_table[i].d);
	ck_assert_int_eq(m.ffn, model_table[i].ffn);
	ck_assert_int_eq(m.vocab, model_table[i].V);
	ck_assert_int_eq(m.tied_embeddings, model_table[i].tied);
	ck_assert_int_eq(m.qkv_bias, model_table[i].bias);
	ck_assert_int_eq(m.max_position, model_table[i].max_pos);
	ck_assert_int_eq(m.mlp, CONFIG_MLP_SWIGLU);
	ck_assert_int_eq(m.norm, CONFIG_NORM_RMSNORM);
	ck_assert_int_eq(m.heads % m.kv_heads, 0);
	ck_assert(strstr(m.path, "/models/") != NULL);
}
END_TEST

START_TEST(model_params_llama_3_1_8b)
{
	/* Llama-3.1-8B by hand: L=32, h=4096, a=32, g=8, d=128, ffn=14336, V=128256, untied.
	 *   embeddings V*h            = 128256*4096          =   525,336,576
	 *   untied LM head V*h                               =   525,336,576
	 *   per layer:
	 *     q  h*a*d = 4096*32*128                         =    16,777,216
	 *     k,v 2*h*g*d = 2*4096*8*128                     =     8,388,608
	 *     o  a*d*h = 32*128*4096                         =    16,777,216
	 *     MLP 3*h*ffn = 3*4096*14336                     =   176,160,768
	 *     2 RMSNorms 2*h                                 =         8,192
	 *     layer total                                    =   218,112,000
	 *   32 layers                                        = 6,979,584,000
	 *   final RMSNorm h                                  =         4,096
	 *   total = 525,336,576*2 + 6,979,584,000 + 4,096    = 8,030,261,248  (~8.03e9, the "8B")
	 */
	config_model m = load_model("llama-3.1-8b");
	ck_assert_double_eq(config_model_layer_params(&m), 218112000.0);
	ck_assert_double_eq(config_model_params(&m), 8030261248.0);
}
END_TEST

START_TEST(model_params_llama_3_2_1b)
{
	/* Llama-3.2-1B: L=16, h=2048, a=32, g=8, d=64, ffn=8192, V=128256, tied.
	 *   embeddings 128256*2048 = 262,668,288 (shared with the head)
	 *   per layer: q 2048*32*64 = 4,194,304; k,v 2*2048*8*64 = 2,097,152;
	 *              o 4,194,304; MLP 3*2048*8192 = 50,331,648; norms 4,096
	 *              = 60,821,504
	 *   16 layers = 973,144,064; final norm 2,048
	 *   total = 262,668,288 + 973,144,064 + 2,048 = 1,235,814,400 (~1.24e9) */
	config_model m = load_model("llama-3.2-1b");
	ck_assert_double_eq(config_model_layer_params(&m), 60821504.0);
	ck_assert_double_eq(config_model_params(&m), 1235814400.0);
}
END_TEST

START_TEST(model_params_qwen_biases)
{
	/* Qwen2.5-7B: L=28, h=3584, a=28, g=4, d=128, ffn=18944, V=152064, untied, QKV biases.
	 *   embeddings + head 2*152064*3584 = 1,089,994,752
	 *   per layer: q 3584*28*128 = 12,845,056; k,v 2*3584*4*128 = 3,670,016;
	 *              o 12,845,056; biases a*d + 2*g*d = 3,584 + 1,024 = 4,608;
	 *              MLP 3*3584*18944 = 203,685,888; norms 7,168 = 233,057,792
	 *   28 layers = 6,525,618,176; final norm 3,584
	 *   total = 7,615,616,512 (~7.6e9) */
	config_model m = load_model("qwen2.5-7b");
	ck_assert_double_eq(config_model_layer_params(&m), 233057792.0);
	ck_assert_double_eq(config_model_params(&m), 7615616512.0);
	/* Qwen1.5-0.5B (tied): 151936*1024 = 155,582,464; per layer q 1,048,576 + k,v 2,097,152
	 * + o 1,048,576 + biases 1,024+2,048 = 3,072 + MLP 3*1024*2816 = 8,650,752 + norms 2,048
	 * = 12,850,176; x24 = 308,404,224; + final norm 1,024 -> 463,987,712 */
	m = load_model("qwen1.5-0.5b");
	ck_assert_double_eq(config_model_params(&m), 463987712.0);
}
END_TEST

START_TEST(model_params_layernorm_fixture)
{
	/* model_ok.yaml: L=2, h=64, a=4, g=2, d=16, ffn=128, V=1000, untied, QKV biases, LayerNorm.
	 *   per layer: q 64*4*16 = 4,096; k,v 2*64*2*16 = 4,096; o 4,096; biases 4*16 + 2*2*16 = 128;
	 *              MLP 3*64*128 = 24,576; two LayerNorms with bias 2*(2*64) = 256 -> 37,248
	 *   total = 2*64,000 (embeddings, head) + 2*37,248 + final LayerNorm 128 = 202,624 */
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "model_ok.yaml");
	config_model m = load_model(path);
	ck_assert_str_eq(m.name, "tiny");
	ck_assert_str_eq(m.path, path);
	ck_assert_int_eq(m.norm, CONFIG_NORM_LAYERNORM);
	ck_assert_double_eq(config_model_layer_params(&m), 37248.0);
	ck_assert_double_eq(config_model_params(&m), 202624.0);
}
END_TEST

START_TEST(model_params_learned_positions)
{
	/* A learned position table is max_position x hidden weights (GPT-2's wpe, Megatron's
	 * --max-position-embeddings table, MPT's learned positions); RoPE and ALiBi have none.
	 * model_ok.yaml (202,624 with RoPE, max_position 4096): learned adds 4096 * 64 =
	 * 262,144 -> 464,768; ALiBi adds nothing. */
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "model_ok.yaml");
	config_model m = load_model(path);
	ck_assert_double_eq(config_model_position_params(&m), 0.0);
	m.position = CONFIG_POSITION_ALIBI;
	ck_assert_double_eq(config_model_params(&m), 202624.0);
	m.position = CONFIG_POSITION_LEARNED;
	ck_assert_double_eq(config_model_position_params(&m), 262144.0);
	ck_assert_double_eq(config_model_params(&m), 464768.0);
	/* MPT-7B as bench/corpus/models/mpt-7b.yaml enters it (L 32, h 4096, a = g = 32, d 128,
	 * ffn 10923, V 50368 tied, QKV biases, LayerNorm, 65536 learned positions): per layer
	 * q 16,777,216 + k,v 33,554,432 + o 16,777,216 + biases 12,288 + MLP 134,221,824 +
	 * norms 16,384 = 201,359,360; x 32 = 6,443,499,520; + embedding 206,307,328 + positions
	 * 268,435,456 + final norm 8,192 = 6,918,250,496, where llm-foundry's benchmark table
	 * prints NumParams 6918905856 for its 65536-token run (0.01% apart; without the
	 * positions it would be 3.9% short). */
	config_model mpt = {.layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 32, .head_dim = 128, .ffn = 10923,
			    .vocab = 50368, .tied_embeddings = true, .qkv_bias = true, .norm = CONFIG_NORM_LAYERNORM,
			    .max_position = 65536, .position = CONFIG_POSITION_LEARNED};
	ck_assert_double_eq(config_model_params(&mpt), 6918250496.0);
}
END_TEST

START_TEST(model_defaults_fixture)
{
	/* Omitted keys take Hugging Face's defaults: kv_heads = heads (4), head_dim = h/a = 16;
	 * tied_embeddings and qkv_bias false, SwiGLU, RMSNorm.
	 *   per layer: q 4,096 + k,v 2*64*4*16 = 8,192 + o 4,096 + MLP 24,576 + norms 128 = 41,088
	 *   total = 2*64,000 + 2*41,088 + 64 = 210,240 */
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "model_defaults.yaml");
	config_model m = load_model(path);
	ck_assert_int_eq(m.kv_heads, 4);
	ck_assert_int_eq(m.head_dim, 16);
	ck_assert(!m.tied_embeddings && !m.qkv_bias);
	ck_assert_int_eq(m.norm, CONFIG_NORM_RMSNORM);
	ck_assert_double_eq(config_model_params(&m), 210240.0);
}
END_TEST

START_TEST(model_errors)
{
	expect_error(MODEL, "model_unknown_key.yaml",
		     "4:3: unknown key 'hiden' in 'model', expected one of: name, layers, hidden, heads, kv_heads, "
		     "head_dim, ffn, vocab, tied_embeddings, qkv_bias, mlp, norm, max_position, position");
	/* A missing key is reported at the mapping that lacks it (its first key, line 2). */
	expect_error(MODEL, "model_missing_key.yaml", "2:3: missing required key 'hidden' in 'model'");
	expect_error(MODEL, "model_wrong_type.yaml", "3:11: 'layers' must be an integer from 1 to 4096, got 'abc'");
	expect_error(MODEL, "model_negative.yaml", "3:11: 'layers' must be an integer from 1 to 4096, got '-2'");
	expect_error(MODEL, "model_empty_value.yaml", "8:7: 'ffn' must be an integer from 1 to 524288, got nothing");
	expect_error(MODEL, "model_bad_enum.yaml", "13:9: 'norm' must be one of: rmsnorm, layernorm, got 'batchnorm'");
	expect_error(MODEL, "model_bad_position.yaml",
		     "13:13: 'position' must be one of: rope, alibi, learned, got 'sinusoidal'");
	expect_error(MODEL, "model_bad_bool.yaml", "11:13: 'qkv_bias' must be true or false, got 'maybe'");
	expect_error(MODEL, "model_kv_heads.yaml",
		     "6:13: 'kv_heads' (3) does not divide 'heads' (4), expected a divisor of 4");
	expect_error(MODEL, "model_no_head_dim.yaml",
		     "2:3: 'hidden' (64) is not a multiple of 'heads' (5), expected an explicit 'head_dim'");
	expect_error(MODEL, "model_duplicate.yaml",
		     "10:3: duplicate key 'layers' in 'model' (first at line 3), expected each key once");
	expect_error(MODEL, "model_not_mapping.yaml",
		     "1:1: the top level is a sequence, expected a mapping with the key 'model'");
	expect_error(MODEL, "model_scalar_section.yaml", "1:8: 'model' must be a mapping, got '7'");
	expect_error(MODEL, "model_wrong_top.yaml", "1:1: unknown key 'modle' at the top level, expected one of: model");
	expect_error(MODEL, "empty.yaml", "1:1: empty file, expected a mapping with the key 'model'");
	expect_error(MODEL, "model_alias.yaml", "3:11: alias '*n' is not supported, expected plain values");
	/* A quoted "\0" ended the C string: the name read 'llama' without a word. A quoted
	 * "\n" split every table, CSV row and message that prints the name. */
	expect_error(MODEL, "model_nul.yaml", "2:9: a NUL character (\\0) in a value, expected text");
	expect_error(MODEL, "model_control.yaml",
		     "2:9: 'name' holds a control character (byte 0x0a at position 4), expected printable text");
	/* Syntax errors carry libyaml's position: the unclosed flow sequence "[1, 2" opened on
	 * line 3 is found unterminated at the next key, line 4 column 9 ("hidden" + ':'). */
	expect_error(MODEL, "syntax_error.yaml",
		     "4:9: YAML syntax error: did not find expected ',' or ']' (while parsing a flow sequence at "
		     "line 3), expected valid YAML");
	/* "    layers: 3" under the scalar "name: bad": the ':' at column 11 is illegal there. */
	expect_error(MODEL, "syntax_indent.yaml",
		     "3:11: YAML syntax error: mapping values are not allowed in this context, expected valid YAML");
}
END_TEST

START_TEST(model_missing_file)
{
	config_model m;
	config_error e;
	ck_assert(!config_load_model("no/such/model.yaml", &m, &e));
	ck_assert_str_eq(e.msg, "no/such/model.yaml: no such file, expected a path to a model .yaml file");
}
END_TEST

/* ----------------------------------------------------------- platforms --- */

START_TEST(platform_shipped_loads)
{
	static const char *const names[] = {"a100-2x4-ib400", "dgx-a100", "dgx-h100", "hgx-h200", "a100-pcie"};
	config_platform p = load_platform(names[_i]);
	ck_assert_str_eq(p.name, names[_i]);
	ck_assert_int_ge(p.nodes, 1);
	ck_assert_int_ge(p.gpus_per_node, 1);
	ck_assert(p.gpu.peak_flops > 0 && p.gpu.memory_bytes > 0 && p.gpu.hbm_bandwidth > 0);
	ck_assert(p.intra.bandwidth > 0 && p.intra.pair_bandwidth > 0 && p.intra.latency > 0);
	ck_assert(p.inter.nic_bandwidth > 0 && p.inter.latency > 0 && p.inter.nics_per_node >= 1);
	/* Latencies within NCCL's per-step ranges [NCCL-tuning]: 0.6-4 us NVLink, 3-14 us network. */
	ck_assert(p.intra.latency >= 0.6e-6 && p.intra.latency <= 4e-6);
	ck_assert(p.inter.latency >= 3e-6 && p.inter.latency <= 14e-6);
	double eff[] = {p.eff.gemm, p.eff.memory, p.eff.intra_link, p.eff.inter_link};
	for (size_t k = 0; k < sizeof eff / sizeof eff[0]; k++)
		ck_assert(eff[k] > 0 && eff[k] <= 1);
	/* attention follows the kernel curves (no fixed override) on every shipped platform */
	ck_assert(p.eff.attention == 0);
	ck_assert(p.gpu.sms == 108 || p.gpu.sms == 132);
}
END_TEST

START_TEST(platform_reference_cluster)
{
	/* basp.md's reference cluster: 2 nodes x 4 A100 40GB ([A100-DS]: 312 TFLOP/s, 40 GB,
	 * 1555 GB/s), NVLink mesh 100 GB/s per pair, one 400 Gb/s NIC per node. */
	config_platform p = load_platform("a100-2x4-ib400");
	ck_assert_int_eq(config_platform_gpus(&p), 8);
	ck_assert_int_eq(p.intra.fabric, CONFIG_FABRIC_NVLINK_MESH);
	assert_close(p.gpu.peak_flops, 312e12, 1e-15);
	assert_close(p.gpu.memory_bytes, 40.0 * 1073741824.0, 1e-15);
	assert_close(p.gpu.hbm_bandwidth, 1555e9, 1e-15);
	assert_close(p.intra.pair_bandwidth, 100e9, 1e-15);
	/* Per GPU the mesh sums 3 pair links: 300 GB/s, the A100's NVLink total per direction. */
	assert_close(p.intra.bandwidth, 300e9, 1e-15);
	/* Effective: x intra_link 0.80 (NVLink3 ~20 of 25 GB/s per link): 240 and 80 GB/s. */
	assert_close(config_platform_intra_bw(&p), 240e9, 1e-12);
	assert_close(config_platform_intra_pair_bw(&p), 80e9, 1e-12);
	/* 400 Gb/s = 50 GB/s x inter_link 0.94 = 47 GB/s, inside NCCL's 46-49 GB/s per NDR NIC. */
	ck_assert_int_eq(p.inter.nics_per_node, 1);
	assert_close(p.inter.nic_bandwidth, 50e9, 1e-15);
	assert_close(config_platform_nic_bw(&p), 47e9, 1e-12);
	ck_assert_int_eq(p.inter.topology, CONFIG_TOPO_SINGLE_SWITCH);
	ck_assert_int_eq(p.inter.nodes_per_leaf, 0);
	ck_assert_double_eq(p.inter.oversubscription, 1.0);
}
END_TEST

START_TEST(platform_effective_bandwidths_match_nccl)
{
	/* docs/sources.md "What NCCL achieves": 8xA100 NVSwitch all-reduce busbw ~230 GB/s of 300;
	 * 8xH100 ~370 GB/s of 450; ~46-49 GB/s per NDR NIC. Effective bandwidths within 2%. */
	config_platform a = load_platform("dgx-a100");
	ck_assert_int_eq(a.intra.fabric, CONFIG_FABRIC_NVSWITCH);
	assert_close(config_platform_intra_bw(&a), 230e9, 0.02);
	assert_close(config_platform_intra_pair_bw(&a), config_platform_intra_bw(&a), 1e-15);
	ck_assert_int_eq(a.inter.nics_per_node, 8);
	assert_close(a.inter.nic_bandwidth, 25e9, 1e-15); /* HDR 200 Gb/s */
	config_platform h = load_platform("dgx-h100");
	assert_close(h.gpu.peak_flops, 989e12, 1e-15);
	assert_close(config_platform_intra_bw(&h), 370e9, 0.02);
	assert_close(config_platform_nic_bw(&h), 47.5e9, 0.03);
	config_platform h2 = load_platform("hgx-h200");
	assert_close(h2.gpu.hbm_bandwidth, 4800e9, 1e-15);
	ck_assert_int_eq(h2.inter.topology, CONFIG_TOPO_FAT_TREE);
	ck_assert_int_eq(h2.inter.nodes_per_leaf, 4);
	config_platform pc = load_platform("a100-pcie");
	ck_assert_int_eq(pc.intra.fabric, CONFIG_FABRIC_PCIE);
	assert_close(pc.intra.bandwidth, 32e9, 1e-15); /* PCIe Gen4 x16 */
}
END_TEST

START_TEST(platform_fixtures_ok)
{
	/* platform_ok.yaml: nvswitch 100 GB/s, efficiencies 0.5 -> 50 GB/s effective;
	 * 100 Gb/s NIC = 12.5 GB/s -> 6.25 GB/s effective. */
	config_platform p = load_platform_fixture("platform_ok.yaml");
	ck_assert_str_eq(p.name, "tiny");
	ck_assert_str_eq(p.gpu.name, "test-gpu");
	assert_close(config_platform_intra_bw(&p), 50e9, 1e-15);
	assert_close(config_platform_intra_pair_bw(&p), 50e9, 1e-15);
	assert_close(config_platform_nic_bw(&p), 6.25e9, 1e-15);
	assert_close(p.gpu.memory_bytes, 16.0 * 1073741824.0, 1e-15);
	ck_assert(!p.has_memory_reserve); /* not declared: the derived default applies */
	p = load_platform_fixture("platform_zero_reserve.yaml"); /* 0 is a declared reserve */
	ck_assert(p.has_memory_reserve);
	ck_assert_double_eq(p.memory_reserve, 0);
	/* a size that may be 0 takes 0 bare or with a unit alike; below 0 it is refused */
	{
		double z = -1;
		config_error ze;
		ck_assert(config_parse_size_or_zero("0", &z, &ze) && z == 0);
		z = -1;
		ck_assert_msg(config_parse_size_or_zero("0GB", &z, &ze) && z == 0, "%s", ze.msg);
		ck_assert(config_parse_size_or_zero("2GiB", &z, &ze) && z == 2.0 * 1073741824.0);
		ck_assert(!config_parse_size_or_zero("-1GB", &z, &ze));
		ck_assert_ptr_nonnull(strstr(ze.msg, "must be positive"));
		/* bounded as a GPU's memory (1e15 bytes): 1 PB is the bound, 1e30 GiB above it */
		ck_assert(config_parse_size_or_zero("1PB", &z, &ze) && z == 1e15);
		ck_assert(!config_parse_size_or_zero("1e30GiB", &z, &ze));
		ck_assert_msg(strstr(ze.msg, "expected at most 1e+15 bytes (a GPU's memory range), or 0"), "%s", ze.msg);
		ck_assert(!config_parse_quantity("0GB", CONFIG_UNIT_SIZE, &z, &ze)); /* sizes elsewhere stay > 0 */
	}
	/* nvlink-mesh with 50 GB/s pairs and 4 GPUs: 3 x 50 = 150 GB/s per GPU. */
	p = load_platform_fixture("platform_mesh.yaml");
	ck_assert_int_eq(p.intra.fabric, CONFIG_FABRIC_NVLINK_MESH);
	assert_close(p.intra.bandwidth, 150e9, 1e-15);
	assert_close(config_platform_intra_pair_bw(&p), 25e9, 1e-15);
	ck_assert_double_eq(p.inter.message_latency, 0); /* not declared: NCCL's hwLat alone */
	p = load_platform_fixture("platform_message_latency.yaml"); /* a TCP transport's own cost */
	assert_close(p.inter.message_latency, 55e-6, 1e-12);
	p = load_platform_fixture("platform_fat_tree.yaml");
	ck_assert_int_eq(p.inter.topology, CONFIG_TOPO_FAT_TREE);
	ck_assert_int_eq(p.inter.nodes_per_leaf, 2);
	ck_assert_double_eq(p.inter.oversubscription, 2.5);
}
END_TEST

START_TEST(platform_errors)
{
	expect_error(PLATFORM, "platform_unknown_key.yaml",
		     "16:5: unknown key 'nic_bandwith' in 'inter_node', expected one of: nics, nic_bandwidth, latency, "
		     "topology, message_latency, nodes_per_leaf, oversubscription");
	expect_error(PLATFORM, "platform_bad_message_latency.yaml",
		     "18:22: 'message_latency': '40GB/s' is a bandwidth, expected a time such as 2us or 1.5ms");
	expect_error(PLATFORM, "platform_bad_unit.yaml",
		     "16:20: 'nic_bandwidth': '2us' is a time, expected a bandwidth such as 400Gbps or 50GB/s");
	expect_error(PLATFORM, "platform_no_unit.yaml",
		     "12:16: 'bandwidth': '100' has no unit, expected a bandwidth such as 400Gbps or 50GB/s");
	expect_error(PLATFORM, "platform_negative.yaml",
		     "8:13: 'memory' must be a size from 1 MB to 1 PB, got '-16GiB'");
	expect_error(PLATFORM, "platform_out_of_range.yaml", "20:11: 'gemm' must be a number from 0.001 to 1, got '1.5'");
	expect_error(PLATFORM, "platform_zero_efficiency.yaml",
		     "24:17: 'inter_link' must be a number from 0.001 to 1, got '0'");
	expect_error(PLATFORM, "platform_bad_enum.yaml",
		     "18:15: 'topology' must be one of: single-switch, fat-tree, rail-optimized, got 'torus'");
	expect_error(PLATFORM, "platform_zero_nodes.yaml", "3:10: 'nodes' must be an integer from 1 to 1048576, got '0'");
	expect_error(PLATFORM, "platform_gpu_not_map.yaml", "5:8: 'gpu' must be a mapping, got 'A100'");
	expect_error(PLATFORM, "platform_mesh_no_pair.yaml",
		     "11:5: missing required key 'pair_bandwidth' in 'intra_node'");
	expect_error(PLATFORM, "platform_switch_no_bw.yaml", "11:5: missing required key 'bandwidth' in 'intra_node'");
	expect_error(PLATFORM, "platform_pair_on_switch.yaml",
		     "13:21: 'pair_bandwidth' applies only to fabric nvlink-mesh, expected 'bandwidth' alone for "
		     "fabric nvswitch");
	expect_error(PLATFORM, "platform_fat_tree_no_leaf.yaml",
		     "15:5: missing required key 'nodes_per_leaf' in 'inter_node'");
	expect_error(PLATFORM, "platform_oversub.yaml", "20:23: 'oversubscription' must be a number from 1 to 1024, got '0.5'");
	expect_error(PLATFORM, "platform_bad_reserve.yaml",
		     "21:19: 'memory_reserve': '-1GiB' must be positive, expected a size such as 40GiB or 512MiB, or 0");
	expect_error(PLATFORM, "platform_duplicate.yaml",
		     "14:5: duplicate key 'latency' in 'intra_node' (first at line 13), expected each key once");
	expect_error(PLATFORM, "platform_missing_section.yaml", "2:3: missing required key 'efficiency' in 'platform'");
	/* A model file is not a platform: its top-level key is reported. */
	expect_error(PLATFORM, "model_ok.yaml", "1:1: unknown key 'model' at the top level, expected one of: platform");
}
END_TEST

/* ---------------------------------------------------------- shipped data --- */

START_TEST(data_shipped_name_vs_path)
{
	char out[CONFIG_PATH_MAX], want[CONFIG_PATH_MAX];
	config_error e;
	/* A bare name is looked up under $SPSIM_DATA_DIR/<kind>/<name>.yaml. */
	ck_assert(config_find_data("models", "llama-3.1-8b", out, sizeof out, &e));
	snprintf(want, sizeof want, "%s/models/llama-3.1-8b.yaml", getenv("SPSIM_DATA_DIR"));
	ck_assert_str_eq(out, want);
	/* Anything with '/' or ending in .yaml is a path, returned as given. */
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "model_ok.yaml");
	ck_assert(config_find_data("models", path, out, sizeof out, &e));
	ck_assert_str_eq(out, path);
	ck_assert(!config_find_data("models", "missing.yaml", out, sizeof out, &e));
	ck_assert_str_eq(e.msg, "missing.yaml: no such file, expected a path to a model .yaml file");
	ck_assert(!config_find_data("platforms", "", out, sizeof out, &e));
	ck_assert_str_eq(e.msg, "empty platform name, expected a shipped platform name or a path to a .yaml file");
	/* Too small an output buffer is an error, not a truncated path. */
	char tiny[8];
	ck_assert(!config_find_data("models", "llama-3.1-8b", tiny, sizeof tiny, &e));
}
END_TEST

START_TEST(data_unknown_name_lists_shipped)
{
	config_model m;
	config_platform p;
	config_error e;
	ck_assert(!config_load_model("llama-9", &m, &e));
	ck_assert_str_eq(e.msg, "unknown model 'llama-9', expected one of the shipped models: llama-3.1-70b, "
				"llama-3.1-8b, llama-3.2-1b, llama-3.2-3b, qwen1.5-0.5b, qwen1.5-1.8b, qwen1.5-4b, "
				"qwen1.5-7b, qwen2.5-7b (or a path to a .yaml file)");
	ck_assert(!config_load_platform("dgx-b200", &p, &e));
	ck_assert_str_eq(e.msg, "unknown platform 'dgx-b200', expected one of the shipped platforms: a100-2x4-ib400, "
				"a100-pcie, dgx-a100, dgx-h100, hgx-h200 (or a path to a .yaml file)");
}
END_TEST

START_TEST(data_list)
{
	char **names;
	int n = config_list_data("models", &names);
	ck_assert_int_eq(n, N_MODELS);
	for (int i = 1; i < n; i++)
		ck_assert_int_lt(strcmp(names[i - 1], names[i]), 0);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	n = config_list_data("platforms", &names);
	ck_assert_int_eq(n, 5);
	ck_assert_str_eq(names[0], "a100-2x4-ib400");
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	ck_assert_int_eq(config_list_data("no-such-kind", &names), 0);
	free(names);
}
END_TEST

/* Writes text to dir/sub/file, creating dir/sub. */
static void write_file(const char *dir, const char *sub, const char *file, const char *text)
{
	char path[CONFIG_PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, sub);
	ck_assert(mkdir(path, 0700) == 0 || access(path, F_OK) == 0);
	snprintf(path, sizeof path, "%s/%s/%s", dir, sub, file);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void remove_file(const char *dir, const char *sub, const char *file)
{
	char path[CONFIG_PATH_MAX];
	snprintf(path, sizeof path, "%s/%s/%s", dir, sub, file);
	unlink(path);
	snprintf(path, sizeof path, "%s/%s", dir, sub);
	rmdir(path);
}

START_TEST(data_env_dir_first)
{
	/* $SPSIM_DATA_DIR is searched before the compiled-in source and install dirs: a
	 * one-layer llama-3.1-8b there shadows the shipped one, and its extra model is listed. */
	char saved[CONFIG_PATH_MAX];
	snprintf(saved, sizeof saved, "%s", getenv("SPSIM_DATA_DIR"));
	char dir[] = "/tmp/spsim-config-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	const char *text = "model: {name: shadow, layers: 1, hidden: 64, heads: 4, ffn: 128, vocab: 10, "
			   "max_position: 128}\n";
	write_file(dir, "models", "llama-3.1-8b.yaml", text);
	write_file(dir, "models", "extra.yaml", text);
	ck_assert_int_eq(setenv("SPSIM_DATA_DIR", dir, 1), 0);
	config_model m = load_model("llama-3.1-8b");
	ck_assert_str_eq(m.name, "shadow");
	ck_assert_int_eq(m.layers, 1);
	char **names;
	int n = config_list_data("models", &names);
	/* The nine shipped models (from the compiled-in source dir) plus "extra", each once. */
	ck_assert_int_eq(n, N_MODELS + 1);
	int extra = 0, llama8 = 0;
	for (int i = 0; i < n; i++) {
		extra += strcmp(names[i], "extra") == 0;
		llama8 += strcmp(names[i], "llama-3.1-8b") == 0;
		free(names[i]);
	}
	free(names);
	ck_assert_int_eq(extra, 1);
	ck_assert_int_eq(llama8, 1);
	/* Without the variable the compiled-in source dir still finds shipped names. */
	ck_assert_int_eq(unsetenv("SPSIM_DATA_DIR"), 0);
	m = load_model("llama-3.1-8b");
	ck_assert_int_eq(m.layers, 32);
	remove_file(dir, "models", "llama-3.1-8b.yaml");
	remove_file(dir, "models", "extra.yaml");
	rmdir(dir);
	/* Restored so the suite also runs in one process (CK_FORK=no). */
	setenv("SPSIM_DATA_DIR", saved, 1);
}
END_TEST

/* --------------------------------------------------------- calibration --- */

START_TEST(token_counts)
{
	long v = -1;
	ck_assert(config_parse_tokens("16384", &v) && v == 16384);
	ck_assert(config_parse_tokens("16K", &v) && v == 16 * 1024);
	ck_assert(config_parse_tokens("1m", &v) && v == 1024 * 1024);
	static const char *const bad[] = {"", "0", "-4", "16Q", "16KB", "K", "1.5K", "99999999999999999999"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		v = -1;
		ck_assert_msg(!config_parse_tokens(bad[i], &v), "'%s' accepted", bad[i]);
	}
}
END_TEST

START_TEST(calibration_round_trip)
{
	config_calibration c;
	memset(&c, 0, sizeof c);
	snprintf(c.source, sizeof c.source, "validate \"run 3\": a\\b");
	snprintf(c.platform, sizeof c.platform, "a100-2x4-ib400");
	c.has_intra_latency = c.has_intra_bw = c.has_inter_latency = c.has_inter_bw = true;
	c.intra_latency = 3.14159265e-6;
	c.intra_bw = 231.123456789e9;
	c.inter_latency = 9.87654321e-6;
	c.inter_bw = 46.5e9;
	c.has_gemm = c.has_attention = c.has_memory = true;
	c.gemm = 0.723456789;
	c.attention = 0.55;
	c.memory = 0.8;
	c.has_overhead = true;
	c.overhead = 4.5e-6;
	char path[] = "/tmp/spsim-cal-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert(config_write_calibration(f, &c));
	fclose(f);
	config_calibration r;
	config_error e = {""};
	bool ok = config_load_calibration(path, &r, &e);
	unlink(path);
	ck_assert_msg(ok, "%s", e.msg);
	ck_assert_str_eq(r.path, path);
	ck_assert_str_eq(r.source, c.source);
	ck_assert_str_eq(r.platform, c.platform);
	ck_assert(r.has_intra_latency && r.has_intra_bw && r.has_inter_latency && r.has_inter_bw);
	ck_assert(r.has_gemm && r.has_attention && r.has_memory);
	/* Written with 9 significant digits: read back to 1e-8 relative. */
	assert_close(r.intra_latency, c.intra_latency, 1e-8);
	assert_close(r.intra_bw, c.intra_bw, 1e-8);
	assert_close(r.inter_latency, c.inter_latency, 1e-8);
	assert_close(r.inter_bw, c.inter_bw, 1e-8);
	assert_close(r.gemm, c.gemm, 1e-8);
	assert_close(r.attention, c.attention, 1e-8);
	assert_close(r.memory, c.memory, 1e-8);
	ck_assert(r.has_overhead);
	assert_close(r.overhead, 4.5e-6, 1e-8);
}
END_TEST

START_TEST(collective_overhead_platform_and_calibration)
{
	/* Shipped platforms carry NCCL's 6 us per call (docs/nccl-tests.md section 6). A
	 * calibration with a fitted latency replaces it by 0 (its intercept already holds the
	 * per-call cost) unless it gives its own; one with bandwidths only keeps it. */
	config_platform p;
	config_error e = {""};
	ck_assert_msg(config_load_platform("dgx-a100", &p, &e), "%s", e.msg);
	assert_close(p.coll_overhead, 6e-6, 1e-12);
	config_calibration c;
	memset(&c, 0, sizeof c);
	c.has_inter_bw = true;
	c.inter_bw = 20e9;
	config_platform q = p;
	config_apply_calibration(&q, &c);
	assert_close(q.coll_overhead, 6e-6, 1e-12);
	c.has_intra_latency = true;
	c.intra_latency = 3e-6;
	q = p;
	config_apply_calibration(&q, &c);
	ck_assert(q.coll_overhead == 0);
	c.has_overhead = true;
	c.overhead = 1e-6;
	q = p;
	config_apply_calibration(&q, &c);
	assert_close(q.coll_overhead, 1e-6, 1e-12);
	/* an explicit 0 round-trips */
	c.overhead = 0;
	char path[] = "/tmp/spsim-cal-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	ck_assert(config_write_calibration(f, &c));
	fclose(f);
	config_calibration r;
	bool ok = config_load_calibration(path, &r, &e);
	unlink(path);
	ck_assert_msg(ok, "%s", e.msg);
	ck_assert(r.has_overhead && r.overhead == 0);
}
END_TEST

/* Writes text to a temporary file (path filled in) and loads it as a calibration. */
static bool load_calibration_text(const char *text, char *path, config_calibration *c, config_error *e)
{
	snprintf(path, 32, "/tmp/spsim-cal-XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	bool ok = config_load_calibration(path, c, e);
	unlink(path);
	return ok;
}

START_TEST(calibration_gpu_kernel_and_attention_points)
{
	/* What validate writes (config.h): the GPU, the attention kernel family, one point
	 * per shape and direction; written and read back exactly. */
	config_calibration c;
	memset(&c, 0, sizeof c);
	snprintf(c.gpu, sizeof c.gpu, "H200-SXM-141GB");
	snprintf(c.attention_kernel, sizeof c.attention_kernel, "cudnn");
	c.n_attention_points = 2;
	c.attention_points[0] = (config_attention_point){"cudnn", 8192, 128, 32, 8, CONFIG_DIRECTION_FWD, true, 540, 531, 548};
	c.attention_points[1] = (config_attention_point){"cudnn", 32768, 128, 32, 8, CONFIG_DIRECTION_BWD, true, 410.5, 400, 415};
	char *text = NULL, path[32];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert(f && config_write_calibration(f, &c));
	fclose(f);
	config_calibration r;
	config_error e = {""};
	bool ok = load_calibration_text(text, path, &r, &e);
	free(text);
	ck_assert_msg(ok, "%s", e.msg);
	ck_assert_str_eq(r.gpu, "H200-SXM-141GB");
	ck_assert_str_eq(r.attention_kernel, "cudnn");
	ck_assert_int_eq(r.n_attention_points, 2);
	ck_assert_str_eq(r.attention_points[1].kernel, "cudnn");
	ck_assert_int_eq(r.attention_points[1].seq, 32768);
	ck_assert_int_eq(r.attention_points[1].kv_heads, 8);
	ck_assert_int_eq(r.attention_points[1].direction, CONFIG_DIRECTION_BWD);
	assert_close(r.attention_points[1].tflops, 410.5, 1e-9);
	assert_close(r.attention_points[0].p10, 531, 1e-9);

	/* The GPU check: the platform with that GPU accepts it (case aside), another refuses
	 * it naming both GPUs; a calibration without a gpu is accepted anywhere. */
	config_platform h200, a100;
	ck_assert(config_load_platform("hgx-h200", &h200, &e));
	ck_assert(config_load_platform("dgx-a100", &a100, &e));
	ck_assert(config_calibration_check(&r, &h200, &e));
	snprintf(r.gpu, sizeof r.gpu, "h200-sxm-141gb");
	ck_assert(config_calibration_check(&r, &h200, &e));
	ck_assert(!config_calibration_check(&r, &a100, &e));
	ck_assert_msg(strstr(e.msg, "'h200-sxm-141gb'") && strstr(e.msg, "'A100-SXM4-80GB'"), "%s", e.msg);
	r.gpu[0] = 0;
	ck_assert(config_calibration_check(&r, &a100, &e));

	/* Bad points: each refused with the place and what was expected. */
	static const struct {
		const char *text, *want;
	} bad[] = {
		{"calibration:\n  attention_points: 3\n", "must be a non-empty list"},
		{"calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8, head_dim: 64, heads: 6, kv_heads: 4, "
		 "direction: fwd, tflops: 5, p10: 4, p90: 6}\n",
		 "not a multiple of 4 kv heads"},
		{"calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8, head_dim: 64, heads: 8, kv_heads: 4, "
		 "direction: up, tflops: 5, p10: 4, p90: 6}\n",
		 "direction"},
		{"calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8, head_dim: 64, heads: 8, kv_heads: 4, "
		 "direction: bwd, tflops: 5, p10: 6, p90: 7}\n",
		 "want p10 <= tflops <= p90"},
		{"calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8, heads: 8, kv_heads: 4, direction: bwd, "
		 "tflops: 5, p10: 4, p90: 7}\n",
		 "head_dim"},
		{"calibration:\n  attention_points:\n    - {kernel: cudnn, seq: 8, head_dim: 64, heads: 8, kv_heads: 4, "
		 "direction: bwd, tflops: 5, p10: 4, p90: 7, clock: 3}\n",
		 "clock"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char p2[32];
		e.msg[0] = 0;
		ck_assert_msg(!load_calibration_text(bad[i].text, p2, &r, &e), "case %zu accepted", i);
		ck_assert_msg(strstr(e.msg, bad[i].want) && strstr(e.msg, p2), "case %zu: %s", i, e.msg);
	}
}
END_TEST

START_TEST(calibration_round_trip_partial)
{
	/* Absent quantities stay absent through a write and a read. */
	config_calibration c;
	memset(&c, 0, sizeof c);
	c.has_inter_bw = true;
	c.inter_bw = 23.5e9;
	char path[] = "/tmp/spsim-cal-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	ck_assert(config_write_calibration(f, &c));
	fclose(f);
	config_calibration r;
	config_error e = {""};
	bool ok = config_load_calibration(path, &r, &e);
	unlink(path);
	ck_assert_msg(ok, "%s", e.msg);
	ck_assert(!r.has_intra_latency && !r.has_intra_bw && !r.has_inter_latency && r.has_inter_bw);
	ck_assert(!r.has_gemm && !r.has_attention && !r.has_memory);
	ck_assert_str_eq(r.source, "");
	assert_close(r.inter_bw, 23.5e9, 1e-9);
}
END_TEST

START_TEST(calibration_apply)
{
	/* On the 2x4 mesh: a measured 240 GB/s per GPU becomes the intra bandwidth with
	 * efficiency 1, i.e. 240/3 = 80 GB/s per pair; 46 GB/s per NIC likewise; latencies and
	 * compute efficiencies replace; what the file lacks (attention) is kept. */
	config_platform p = load_platform("a100-2x4-ib400");
	double attention = p.eff.attention;
	config_calibration c;
	memset(&c, 0, sizeof c);
	c.has_intra_latency = c.has_intra_bw = c.has_inter_latency = c.has_inter_bw = true;
	c.intra_latency = 3e-6;
	c.intra_bw = 240e9;
	c.inter_latency = 9e-6;
	c.inter_bw = 46e9;
	c.has_gemm = c.has_memory = true;
	c.gemm = 0.72;
	c.memory = 0.85;
	config_apply_calibration(&p, &c);
	ck_assert_double_eq(p.eff.intra_link, 1.0);
	ck_assert_double_eq(p.eff.inter_link, 1.0);
	assert_close(config_platform_intra_bw(&p), 240e9, 1e-15);
	assert_close(config_platform_intra_pair_bw(&p), 80e9, 1e-15);
	assert_close(config_platform_nic_bw(&p), 46e9, 1e-15);
	ck_assert_double_eq(p.intra.latency, 3e-6);
	ck_assert_double_eq(p.inter.latency, 9e-6);
	ck_assert_double_eq(p.eff.gemm, 0.72);
	ck_assert_double_eq(p.eff.memory, 0.85);
	ck_assert_double_eq(p.eff.attention, attention);
	/* On an NVSwitch platform the pair bandwidth equals the per-GPU one. */
	config_platform a = load_platform("dgx-a100");
	config_calibration only_bw;
	memset(&only_bw, 0, sizeof only_bw);
	only_bw.has_intra_bw = true;
	only_bw.intra_bw = 225e9;
	double inter_eff = a.eff.inter_link, lat = a.intra.latency;
	config_apply_calibration(&a, &only_bw);
	assert_close(config_platform_intra_pair_bw(&a), 225e9, 1e-15);
	ck_assert_double_eq(a.eff.inter_link, inter_eff);
	ck_assert_double_eq(a.intra.latency, lat);
}
END_TEST

START_TEST(calibration_files)
{
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "calibration_partial.yaml");
	config_calibration c;
	config_error e = {""};
	ck_assert_msg(config_load_calibration(path, &c, &e), "%s", e.msg);
	ck_assert_str_eq(c.source, "nccl-tests");
	ck_assert(c.has_inter_bw && !c.has_inter_latency && !c.has_intra_bw);
	assert_close(c.inter_bw, 46e9, 1e-15);
	expect_error(CALIBRATION, "calibration_bad_eff.yaml", "3:11: 'gemm' must be a number from 0.001 to 1, got '0'");
	expect_error(CALIBRATION, "calibration_bad_overhead.yaml",
		     "2:24: 'collective_overhead': '6 parsecs' has an unknown unit 'parsecs', expected a time such as 2us "
		     "or 1.5ms");
	expect_error(PLATFORM, "platform_negative_overhead.yaml",
		     "27:24: 'collective_overhead' must be a time from 0 to 1 s, got '-6us'");
	expect_error(CALIBRATION, "calibration_unknown_key.yaml",
		     "2:30: unknown key 'bw' in 'intra_node', expected one of: latency, bandwidth, protocols");
	expect_error(CALIBRATION, "model_ok.yaml",
		     "1:1: unknown key 'model' at the top level, expected one of: calibration");
	/* per-protocol links (docs/nccl-tests.md): each entry read into its class and protocol,
	 * what an entry leaves out left unset; an empty entry, an unknown protocol or a value
	 * out of range is an error at its place */
	fixture(path, sizeof path, "calibration_protocols.yaml");
	ck_assert_msg(config_load_calibration(path, &c, &e), "%s", e.msg);
	const config_proto_link *ll = &c.proto[0][0], *ll128 = &c.proto[0][1], *simple = &c.proto[0][2];
	ck_assert(ll->has_latency && ll->has_bw && ll128->has_latency && !ll128->has_bw && simple->has_latency &&
		  simple->has_bw);
	assert_close(ll->latency, 1.2e-6, 1e-12);
	assert_close(ll->bandwidth, 760e9, 1e-12);
	assert_close(ll128->latency, 1.5e-6, 1e-12);
	assert_close(simple->bandwidth, 230e9, 1e-12);
	ck_assert(!c.proto[1][0].has_latency && !c.proto[1][0].has_bw && !c.proto[1][1].has_bw);
	ck_assert(c.proto[1][2].has_bw && !c.proto[1][2].has_latency);
	assert_close(c.proto[1][2].bandwidth, 45e9, 1e-12);
	ck_assert(c.has_overhead && c.overhead == 0);
	expect_error(CALIBRATION, "calibration_empty_protocol.yaml",
		     "4:11: 'll' is empty, expected at least one of latency, bandwidth");
	expect_error(CALIBRATION, "calibration_bad_protocol.yaml",
		     "4:7: unknown key 'LL128' in 'protocols', expected one of: ll, ll128, simple, tree_ll, tree_ll128, "
		     "tree_simple, ring_ll, ring_ll128, ring_simple, nvls");
	expect_error(CALIBRATION, "calibration_bad_protocol_bw.yaml",
		     "4:27: 'bandwidth' must be a bandwidth from 1 MB/s to 1 PB/s, got '0GB/s'");
	ck_assert(!config_load_calibration("/nonexistent/cal.yaml", &c, &e));
	ck_assert_str_eq(e.msg,
			 "/nonexistent/cal.yaml: cannot open: No such file or directory, expected a readable YAML file");
}
END_TEST

/* ---------------------------------------------------------------- jobs --- */

START_TEST(job_defaults)
{
	/* DeepSpeed defaults, docs/sources.md [DS-zero-config], [DS-sp-comm]: stage 1, overlap_comm only for
	 * stage 3, 5e8-element reduce and allgather buckets, 5e7 prefetch, fp32 gradient
	 * communication when SP > 1. */
	config_job j;
	config_job_defaults(&j);
	ck_assert_int_eq(j.strategy, CONFIG_STRATEGY_ULYSSES);
	ck_assert_int_eq(j.gpus, 0);
	ck_assert_int_eq(j.sp, 0);
	ck_assert_int_eq(j.micro_batch, 1);
	ck_assert_int_eq(j.seq_len, 0);
	ck_assert_int_eq(j.grad_accum, 1);
	ck_assert_int_eq(j.zero_stage, 1);
	ck_assert_int_eq(j.recompute, CONFIG_RECOMPUTE_NONE);
	ck_assert_int_eq(j.dtype, CONFIG_DTYPE_BF16);
	ck_assert_int_eq(j.zero_overlap, -1);
	ck_assert_double_eq(j.reduce_bucket_elems, 5e8);
	ck_assert_double_eq(j.allgather_bucket_elems, 5e8);
	ck_assert_double_eq(j.prefetch_bucket_elems, 5e7);
	ck_assert_int_eq(j.zero3_prefetch, CONFIG_ZERO3_PREFETCH_DEEPSPEED); /* DeepSpeed + Hugging Face */
	ck_assert_int_eq(j.fp32_grad_comm_set, 0);
	ck_assert(!config_job_zero_overlap(&j));
	j.zero_stage = 3;
	ck_assert(config_job_zero_overlap(&j));
	j.zero_overlap = 0;
	ck_assert(!config_job_zero_overlap(&j));
	ck_assert(config_job_fp32_grad_comm(&j, 8));
	ck_assert(!config_job_fp32_grad_comm(&j, 1));
	j.fp32_grad_comm_set = 1;
	j.fp32_grad_comm = false;
	ck_assert(!config_job_fp32_grad_comm(&j, 8));
	/* contiguous_gradients: on by default (DeepSpeedZeroConfig); off stays off except where
	 * DeepSpeed forces it, optimizer offload at stages 1-2 (stage_1_and_2.py: "CPU-Offload
	 * requires contiguous gradients"); stage 3 takes it as given */
	ck_assert(j.contiguous_gradients);
	ck_assert(config_job_contiguous_gradients(&j));
	j.contiguous_gradients = false;
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
	for (j.zero_stage = 0; j.zero_stage <= 3; j.zero_stage++)
		ck_assert(config_job_contiguous_gradients(&j) == (j.zero_stage == 1 || j.zero_stage == 2));
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_NONE;
	for (j.zero_stage = 0; j.zero_stage <= 3; j.zero_stage++)
		ck_assert(!config_job_contiguous_gradients(&j));
}
END_TEST

START_TEST(job_full_file)
{
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "job_full.yaml");
	config_job j;
	config_job_defaults(&j);
	char model[CONFIG_PATH_MAX] = "", platform[CONFIG_PATH_MAX] = "", cal[CONFIG_PATH_MAX] = "";
	int nodes = -1;
	config_error e = {""};
	ck_assert_msg(config_load_job(path, &j, model, platform, cal, &nodes, &e), "%s", e.msg);
	ck_assert_str_eq(model, "llama-3.1-8b");
	ck_assert_str_eq(platform, "a100-2x4-ib400");
	/* a path is relative to the job file's directory; shipped names stay names */
	char want_cal[CONFIG_PATH_MAX + 32];
	snprintf(want_cal, sizeof want_cal, "%.*s/measured/cal.yaml", (int)(strrchr(path, '/') - path), path);
	ck_assert_str_eq(cal, want_cal);
	ck_assert_int_eq(nodes, 2);
	ck_assert_int_eq(j.gpus, 8);
	ck_assert_int_eq(j.strategy, CONFIG_STRATEGY_BASP);
	ck_assert_int_eq(j.sp, 8);
	ck_assert_int_eq(j.micro_batch, 4);
	ck_assert_int_eq(j.seq_len, 32768);
	ck_assert_int_eq(j.grad_accum, 2);
	ck_assert_int_eq(j.zero_stage, 3);
	ck_assert_int_eq(j.recompute, CONFIG_RECOMPUTE_FULL);
	ck_assert_int_eq(j.zero_overlap, 0);
	ck_assert_double_eq(j.reduce_bucket_elems, 2e8);
	ck_assert_double_eq(j.allgather_bucket_elems, 3e8);
	ck_assert_double_eq(j.prefetch_bucket_elems, 1e7);
	ck_assert_int_eq(j.zero3_prefetch, CONFIG_ZERO3_PREFETCH_LAYER);
	ck_assert_int_eq(j.fp32_grad_comm_set, 1);
	ck_assert(!j.fp32_grad_comm);
	ck_assert_int_eq(j.impl, CONFIG_IMPL_MEGATRON);
	ck_assert(j.memory_reserve_set);
	ck_assert_double_eq(j.memory_reserve, 1.5 * 1073741824.0);
}
END_TEST

START_TEST(job_unused_zero_settings)
{
	/* The job_full file's ZeRO settings (stage 3, layer prefetch, prefetch bucket 1e7,
	 * allgather bucket 3e8) are all used at stage 3; moved to stage 1, the two stage-3
	 * ones are not, the allgather bucket still is (ZeRO-1's parameter all-gather); at
	 * stage 0 none of the three is. Defaults are never reported. */
	char path[CONFIG_PATH_MAX], buf[256];
	fixture(path, sizeof path, "job_full.yaml");
	config_job j;
	config_job_defaults(&j);
	config_error e = {""};
	ck_assert_msg(config_load_job(path, &j, NULL, NULL, NULL, NULL, &e), "%s", e.msg);
	ck_assert(!config_job_unused_zero(&j, buf, sizeof buf));
	ck_assert_str_eq(buf, "");
	j.zero_stage = 1;
	ck_assert(config_job_unused_zero(&j, buf, sizeof buf));
	ck_assert_str_eq(buf, "--zero3-prefetch layer (ZeRO-3 only), --prefetch-bucket 1e+07 (ZeRO-3 only)");
	j.zero_stage = 0;
	ck_assert(config_job_unused_zero(&j, buf, sizeof buf));
	ck_assert_str_eq(buf, "--zero3-prefetch layer (ZeRO-3 only), --prefetch-bucket 1e+07 (ZeRO-3 only), "
			      "--allgather-bucket 3e+08 (ZeRO-1 to 3)");
	config_job_defaults(&j);
	for (j.zero_stage = 0; j.zero_stage <= 3; j.zero_stage++)
		ck_assert(!config_job_unused_zero(&j, buf, sizeof buf));
	/* contiguous_gradients off: DeepSpeed's ZeRO optimizers only (not stage 0's engine
	 * all-reduce, not PyTorch FSDP), and forced back on by optimizer offload at stages 1-2 */
	char cg[CONFIG_PATH_MAX];
	fixture(cg, sizeof cg, "job_contiguous.yaml");
	config_job_defaults(&j);
	ck_assert_msg(config_load_job(cg, &j, NULL, NULL, NULL, NULL, &e), "%s", e.msg);
	ck_assert(!j.contiguous_gradients);
	ck_assert_int_eq(j.zero_stage, 2);
	ck_assert(!config_job_unused_zero(&j, buf, sizeof buf));
	j.zero_stage = 3;
	ck_assert(!config_job_unused_zero(&j, buf, sizeof buf));
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
	ck_assert(config_job_unused_zero(&j, buf, sizeof buf));
	ck_assert_str_eq(buf, "--contiguous-gradients off (DeepSpeed ZeRO-1 to 3 only, not zero3_prefetch layer)");
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_DEEPSPEED;
	j.zero_stage = 0;
	ck_assert(config_job_unused_zero(&j, buf, sizeof buf));
	ck_assert_str_eq(buf, "--contiguous-gradients off (DeepSpeed ZeRO-1 to 3 only, not zero3_prefetch layer)");
	j.zero_stage = 1;
	j.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
	ck_assert(config_job_unused_zero(&j, buf, sizeof buf));
	ck_assert_str_eq(buf, "--contiguous-gradients off (DeepSpeed forces it on under --offload-optimizer cpu)");
	j.zero_stage = 3;
	ck_assert(!config_job_unused_zero(&j, buf, sizeof buf));
	config_job_defaults(&j);
	/* a short buffer truncates, never overflows */
	j.zero_stage = 0;
	j.zero3_prefetch = CONFIG_ZERO3_PREFETCH_LAYER;
	char small[8];
	ck_assert(config_job_unused_zero(&j, small, sizeof small));
	ck_assert_str_eq(small, "--zero3");
}
END_TEST

START_TEST(job_minimal_file)
{
	/* Absent keys keep the caller's values; absent strings leave the buffers alone; nodes = 0. */
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "job_minimal.yaml");
	config_job j;
	config_job_defaults(&j);
	j.micro_batch = 3;
	j.zero_overlap = 1;
	char model[CONFIG_PATH_MAX] = "keep";
	int nodes = -1;
	config_error e = {""};
	ck_assert_msg(config_load_job(path, &j, model, NULL, NULL, &nodes, &e), "%s", e.msg);
	ck_assert_int_eq(j.seq_len, 8192);
	ck_assert_int_eq(j.micro_batch, 3);
	ck_assert_int_eq(j.zero_overlap, -1); /* "default" */
	ck_assert_int_eq(j.zero_stage, 1);
	ck_assert_str_eq(model, "keep");
	ck_assert_int_eq(nodes, 0);
}
END_TEST

/* cp_comm_type: Megatron-Core's name for what the SP group runs; with strategy basp it
 * is the inner strategy, alone it is the strategy (a2a+p2p = usp, its degrees kept). */
START_TEST(job_impl_hf_trainer)
{
	/* the third impl reads back as itself, not as hf */
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "job_hf_trainer.yaml");
	config_job j;
	config_job_defaults(&j);
	ck_assert_int_eq(j.impl, CONFIG_IMPL_HF);
	config_error e = {""};
	ck_assert_msg(config_load_job(path, &j, NULL, NULL, NULL, NULL, &e), "%s", e.msg);
	ck_assert_int_eq(j.impl, CONFIG_IMPL_HF_TRAINER);
	ck_assert(config_impl_hf(j.impl));
	ck_assert(!config_impl_hf(CONFIG_IMPL_MEGATRON));
}
END_TEST

START_TEST(job_cp_comm_type)
{
	char path[CONFIG_PATH_MAX];
	config_job j;
	config_error e = {""};
	fixture(path, sizeof path, "job_cp_comm.yaml");
	config_job_defaults(&j);
	ck_assert_msg(config_load_job(path, &j, NULL, NULL, NULL, NULL, &e), "%s", e.msg);
	ck_assert_int_eq(j.strategy, CONFIG_STRATEGY_BASP);
	ck_assert_int_eq(j.basp_inner, CONFIG_STRATEGY_RING);
	ck_assert_int_eq(j.cp_comm, CONFIG_CP_COMM_ALL_GATHER);
	fixture(path, sizeof path, "job_cp_comm_usp.yaml");
	config_job_defaults(&j);
	ck_assert_msg(config_load_job(path, &j, NULL, NULL, NULL, NULL, &e), "%s", e.msg);
	ck_assert_int_eq(j.strategy, CONFIG_STRATEGY_USP);
	ck_assert_int_eq(j.ulysses_degree, 4);
	ck_assert_int_eq(j.cp_comm, CONFIG_CP_COMM_P2P);
}
END_TEST

/* A model with only the hidden size set: all config_job_resolve_auto reads. */
static config_model hidden_only(int h)
{
	config_model m;
	memset(&m, 0, sizeof m);
	m.hidden = h;
	return m;
}

START_TEST(job_auto_buckets_resolve_from_the_hidden_size)
{
	/* transformers' HfTrainerDeepSpeedConfig.trainer_config_finalize fills the auto sizes
	 * from hidden_size h: reduce_bucket_size = h * h, stage3_prefetch_bucket_size =
	 * int(0.9 * h * h) (Python: left to right in doubles, int() truncates). By hand:
	 *   h = 5120 (Qwen2.5-14B): 5120^2 = 26214400; 0.9 * 5120 = 4608, 4608 * 5120 = 23592960
	 *     (the numbers bench/corpus's ms-swift case used to write out);
	 *   h = 2560 (Qwen3-4B): 6553600; 0.9 * 2560 = 2304, 2304 * 2560 = 5898240;
	 *   h = 3: 9; 0.9 * 3 * 3 = 8.1 -> 8 (the truncation).
	 * The file's allgather_bucket stays its number; the intent survives resolution, so
	 * another model resolves again. */
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "job_auto_bucket.yaml");
	config_job j;
	config_job_defaults(&j);
	config_error e = {""};
	ck_assert_msg(config_load_job(path, &j, NULL, NULL, NULL, NULL, &e), "%s", e.msg);
	ck_assert(j.reduce_bucket_auto);
	ck_assert(j.prefetch_bucket_auto);
	ck_assert_double_eq(j.reduce_bucket_elems, 0); /* unresolved until the model is known */
	ck_assert_double_eq(j.prefetch_bucket_elems, 0);
	static const struct {
		int h;
		double reduce, prefetch;
	} cases[] = {{5120, 26214400, 23592960}, {2560, 6553600, 5898240}, {3, 9, 8}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		config_model m = hidden_only(cases[i].h);
		config_job_resolve_auto(&j, &m);
		ck_assert_double_eq(j.reduce_bucket_elems, cases[i].reduce);
		ck_assert_double_eq(j.prefetch_bucket_elems, cases[i].prefetch);
		ck_assert_double_eq(j.allgather_bucket_elems, 3e8);
		ck_assert(j.reduce_bucket_auto && j.prefetch_bucket_auto);
	}
	/* numbers are left alone: DeepSpeed's defaults stay the defaults */
	config_job d;
	config_job_defaults(&d);
	config_model m = hidden_only(5120);
	config_job_resolve_auto(&d, &m);
	ck_assert(!d.reduce_bucket_auto && !d.prefetch_bucket_auto);
	ck_assert_double_eq(d.reduce_bucket_elems, 5e8);
	ck_assert_double_eq(d.prefetch_bucket_elems, 5e7);
	/* a number given after auto (a sweep value, a flag over the file) clears the intent */
	config_job_defaults(&d);
	ck_assert(config_job_bucket_parse(CONFIG_R_REDUCE_BUCKET, "reduce_bucket", false, "auto", &d.reduce_bucket_elems,
					  &d.reduce_bucket_auto, &e));
	ck_assert(d.reduce_bucket_auto);
	ck_assert(config_job_bucket_parse(CONFIG_R_REDUCE_BUCKET, "reduce_bucket", false, "2e6", &d.reduce_bucket_elems,
					  &d.reduce_bucket_auto, &e));
	ck_assert(!d.reduce_bucket_auto);
	ck_assert_double_eq(d.reduce_bucket_elems, 2e6);
	/* ZeRO-1 does not read the prefetch bucket: auto there is reported as such */
	char buf[256];
	j.zero_stage = 1;
	ck_assert(config_job_unused_zero(&j, buf, sizeof buf));
	ck_assert_str_eq(buf, "--prefetch-bucket auto (ZeRO-3 only)");
	j.zero_stage = 3;
	ck_assert(!config_job_unused_zero(&j, buf, sizeof buf));
}
END_TEST

START_TEST(job_errors)
{
	expect_error(JOB, "job_bad_zero.yaml", "3:9: 'zero' must be an integer from 0 to 3, got '5'");
	expect_error(JOB, "job_bad_strategy.yaml", "2:13: 'strategy' must be one of: ulysses, basp, ring, usp, got 'tree'");
	expect_error(JOB, "job_bad_overlap.yaml", "2:17: 'zero_overlap' must be true, false or default, got 'sometimes'");
	expect_error(JOB, "job_bad_contiguous.yaml", "2:25: 'contiguous_gradients' must be true or false, got 'maybe'");
	expect_error(JOB, "job_unknown_key.yaml",
		     "2:3: unknown key 'seqlen' in 'job', expected one of: gpus, strategy, sp, micro_batch, seq_len, "
		     "grad_accum, zero, recompute, dtype, zero_overlap, reduce_bucket, allgather_bucket, "
		     "prefetch_bucket, fp32_grad_comm, model, platform, nodes, calibration, a2a, basp_uneven, "
		     "attention_kernel, impl, zero3_prefetch, memory_reserve, basp_inner, cp_split, ulysses_degree, ring_degree, what_if, cp_comm_type, offload_activations, tile_mlp, tile_logits, offload_optimizer, "
		     "contiguous_gradients");
	/* 2.5e8 is a whole count in exponent form (DeepSpeed's own spelling) and is taken; 0.5 is not whole */
	expect_error(JOB, "job_bad_bucket.yaml",
		     "4:21: 'allgather_bucket' must be a whole number from 1 to 1e+15 (e.g. 5e8), got '0.5'");
	/* auto: what transformers' Trainer fills (reduce, prefetch), never the all-gather bucket */
	expect_error(JOB, "job_bad_bucket_auto.yaml",
		     "3:21: 'allgather_bucket' must be a whole number from 1 to 1e+15 (e.g. 5e8), got 'auto' (no auto "
		     "here: transformers' Trainer fills reduce_bucket_size and stage3_prefetch_bucket_size from the "
		     "model's hidden size, never allgather_bucket_size)");
	expect_error(JOB, "job_bad_bucket_autox.yaml",
		     "3:18: 'reduce_bucket' must be auto or a whole number from 1 to 1e+15 (e.g. 5e8), got 'autox'");
	expect_error(JOB, "job_bad_bucket_negative.yaml",
		     "3:20: 'prefetch_bucket' must be auto or a whole number from 1 to 1e+15 (e.g. 5e8), got '-1'");
	expect_error(JOB, "job_bad_inner.yaml", "3:15: 'basp_inner' must be one of: ulysses, ring, usp, got 'tree'");
	expect_error(JOB, "job_bad_zero3_prefetch.yaml", "3:19: 'zero3_prefetch' must be one of: deepspeed, layer, got 'fsdp'");
	expect_error(JOB, "job_bad_split.yaml", "3:13: 'cp_split' must be one of: zigzag, naive, got 'spiral'");
	expect_error(JOB, "job_bad_cp_comm.yaml",
		     "3:17: 'cp_comm_type' must be one of: p2p, all_gather, a2a, a2a+p2p, got 'ring'");
	expect_error(JOB, "job_cp_comm_conflict.yaml",
		     "3:17: cp_comm_type p2p is strategy ring, but the strategy given is ulysses; give one of them, or basp "
		     "with cp_comm_type p2p for BASP over it");
	expect_error(JOB, "job_bad_impl.yaml", "3:9: 'impl' must be one of: hf, megatron, hf-trainer, got 'deepspeed'");
	expect_error(JOB, "job_bad_impl_underscore.yaml",
		     "3:9: 'impl' must be one of: hf, megatron, hf-trainer, got 'hf_trainer'");
	expect_error(JOB, "job_bad_reserve.yaml",
		     "3:19: 'memory_reserve': '2 apples' has an unknown unit 'apples', expected a size such as 40GiB "
		     "or 512MiB, or 0");
	expect_error(JOB, "job_bad_seq.yaml", "2:12: 'seq_len' must be a token count from 1 to 4294967296 (K and M suffixes: 16K = 16384), got '32KB'");
	expect_error(JOB, "model_ok.yaml", "1:1: unknown key 'model' at the top level, expected one of: job");
}
END_TEST

START_TEST(job_error_leaves_outputs)
{
	/* job_bad_after_model.yaml names a model, then fails on micro_batch: 0. Nothing changes. */
	char path[CONFIG_PATH_MAX];
	fixture(path, sizeof path, "job_bad_after_model.yaml");
	config_job j, before;
	config_job_defaults(&j);
	before = j;
	char model[CONFIG_PATH_MAX] = "keep";
	int nodes = -1;
	config_error e;
	ck_assert(!config_load_job(path, &j, model, NULL, NULL, &nodes, &e));
	ck_assert(strstr(e.msg, ":3:16: 'micro_batch' must be an integer from 1 to 1048576, got '0'") != NULL);
	ck_assert_str_eq(model, "keep");
	ck_assert_int_eq(nodes, -1);
	ck_assert_mem_eq(&j, &before, sizeof j);
}
END_TEST

START_TEST(error_null_is_allowed)
{
	/* Callers that only want a yes/no may pass err = NULL. */
	config_model m;
	double v;
	ck_assert(!config_load_model("llama-9", &m, NULL));
	ck_assert(!config_parse_quantity("2us", CONFIG_UNIT_BANDWIDTH, &v, NULL));
	ck_assert(!config_fail(NULL, "x %d", 1));
	config_error e;
	ck_assert(!config_fail(&e, "x %d", 1));
	ck_assert_str_eq(e.msg, "x 1");
}
END_TEST

/* ---------------------------------------------------- documented defaults -- */
/* The job keys whose default is no value but "derived" or "absent": the code keeps them
 * unset (a sentinel, or nothing at all for the keys that are not job fields) until the
 * platform or the rest of the job decides. true when the default job holds the sentinel. */
static bool default_is_unset(const char *key, const config_job *d)
{
	const struct {
		const char *key;
		bool unset;
	} t[] = {
		{"gpus", d->gpus == 0},
		{"sp", d->sp == 0},
		{"seq_len", d->seq_len == 0},
		{"ulysses_degree", d->ulysses_degree == 0},
		{"ring_degree", d->ring_degree == 0},
		{"attention_kernel", d->attention_kernel == -1},
		{"memory_reserve", !d->memory_reserve_set},
		{"fp32_grad_comm", !d->fp32_grad_comm_set},
		/* not fields of config_job: a job file without them leaves the caller's values */
		{"model", true},
		{"platform", true},
		{"calibration", true},
		{"nodes", true},
		{"cp_comm_type", true},
		{"what_if", true},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcmp(key, t[i].key) == 0)
			return t[i].unset;
	return false;
}

/* Whether the job field of a key that is not in the settings table equals the default's. */
static bool field_is_default(const char *key, const config_job *j, const config_job *d)
{
	if (strcmp(key, "strategy") == 0)
		return j->strategy == d->strategy;
	if (strcmp(key, "basp_inner") == 0)
		return j->basp_inner == d->basp_inner;
	if (strcmp(key, "cp_split") == 0)
		return j->cp_split == d->cp_split;
	if (strcmp(key, "micro_batch") == 0)
		return j->micro_batch == d->micro_batch;
	if (strcmp(key, "grad_accum") == 0)
		return j->grad_accum == d->grad_accum;
	if (strcmp(key, "zero") == 0)
		return j->zero_stage == d->zero_stage;
	ck_abort_msg("job key '%s' has a literal default in docs/job.md but no field check here", key);
	return false;
}

/* docs/job.md's table holds every key the job-file reader accepts and no other, and each
 * default written as a value, read back through that reader (on a job whose every byte
 * was something else), gives the code's default. A default in words must belong to a key
 * the code leaves unset. */
START_TEST(job_keys_documented_with_true_defaults)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/docs/job.md", getenv("SPSIM_DATA_DIR"));
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	config_job d;
	config_job_defaults(&d);
	const char *const *keys = config_job_keys; /* yamltree.h; docs/job.md lists them */
	int n_keys = 0;
	while (keys[n_keys])
		n_keys++;
	bool seen[64] = {false};
	ck_assert_int_lt(n_keys, 64);
	char line[1024], job_path[] = "/tmp/spsim-job-default-XXXXXX";
	int fd = mkstemp(job_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	int rows = 0, literal = 0;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "| `", 3) != 0)
			continue;
		/* | `key` | values | default | */
		char key[64] = "", dflt[256] = "";
		char *k0 = line + 3, *k1 = strchr(k0, '`');
		ck_assert_ptr_nonnull(k1);
		snprintf(key, sizeof key, "%.*s", (int)(k1 - k0), k0);
		char *last = strrchr(line, '|');
		*last = '\0';
		char *cell = strrchr(line, '|');
		ck_assert_ptr_nonnull(cell);
		cell++;
		while (*cell == ' ')
			cell++;
		snprintf(dflt, sizeof dflt, "%s", cell);
		int i = 0;
		while (i < n_keys && strcmp(keys[i], key) != 0)
			i++;
		ck_assert_msg(i < n_keys, "docs/job.md documents '%s', which a job file does not accept", key);
		ck_assert_msg(!seen[i], "docs/job.md lists '%s' twice", key);
		seen[i] = true;
		rows++;
		if (dflt[0] != '`') {
			ck_assert_msg(default_is_unset(key, &d),
				      "docs/job.md gives '%s' a derived default (%s), but the code sets one", key, dflt);
			continue;
		}
		/* the value in code: load `key: value` over a job of other bytes */
		char value[128];
		char *v1 = strchr(dflt + 1, '`');
		ck_assert_ptr_nonnull(v1);
		snprintf(value, sizeof value, "%.*s", (int)(v1 - dflt - 1), dflt + 1);
		char text[256];
		snprintf(text, sizeof text, "job:\n  %s: %s\n", key, value);
		FILE *jf = fopen(job_path, "w");
		ck_assert_ptr_nonnull(jf);
		fputs(text, jf);
		fclose(jf);
		config_job j;
		memset(&j, 0x5a, sizeof j);
		config_error e = {""};
		ck_assert_msg(config_load_job(job_path, &j, NULL, NULL, NULL, NULL, &e), "%s: %s", text, e.msg);
		int s = config_job_setting_find(key);
		if (s >= 0)
			ck_assert_msg(config_job_setting_equal(s, &j, &d), "docs/job.md: '%s' defaults to %s, the code does not",
				      key, value);
		else
			ck_assert_msg(field_is_default(key, &j, &d), "docs/job.md: '%s' defaults to %s, the code does not", key,
				      value);
		literal++;
	}
	fclose(f);
	unlink(job_path);
	for (int i = 0; i < n_keys; i++)
		ck_assert_msg(seen[i], "job key '%s' is missing from docs/job.md's table", keys[i]);
	ck_assert_int_eq(rows, n_keys);
	ck_assert_int_ge(literal, 19); /* 19 of the 33 defaults are values: the check reads them */
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *t = tcase_create("units");
	tcase_add_test(t, units_bandwidth);
	tcase_add_test(t, units_time);
	tcase_add_test(t, units_size);
	tcase_add_test(t, units_flops);
	tcase_add_test(t, units_rejections);
	tcase_add_test(t, job_keys_documented_with_true_defaults);
	tcase_add_test(t, units_names_and_format);
	suite_add_tcase(s, t);

	t = tcase_create("models");
	tcase_add_loop_test(t, model_shipped_loads, 0, N_MODELS);
	tcase_add_test(t, model_params_llama_3_1_8b);
	tcase_add_test(t, model_params_llama_3_2_1b);
	tcase_add_test(t, model_params_qwen_biases);
	tcase_add_test(t, model_params_layernorm_fixture);
	tcase_add_test(t, model_params_learned_positions);
	tcase_add_test(t, model_defaults_fixture);
	tcase_add_test(t, model_errors);
	tcase_add_test(t, model_missing_file);
	suite_add_tcase(s, t);

	t = tcase_create("platforms");
	tcase_add_loop_test(t, platform_shipped_loads, 0, 5);
	tcase_add_test(t, platform_reference_cluster);
	tcase_add_test(t, platform_effective_bandwidths_match_nccl);
	tcase_add_test(t, platform_fixtures_ok);
	tcase_add_test(t, platform_errors);
	suite_add_tcase(s, t);

	t = tcase_create("data");
	tcase_add_test(t, data_shipped_name_vs_path);
	tcase_add_test(t, data_unknown_name_lists_shipped);
	tcase_add_test(t, data_list);
	tcase_add_test(t, data_env_dir_first);
	suite_add_tcase(s, t);

	t = tcase_create("calibration");
	tcase_add_test(t, token_counts);
	tcase_add_test(t, calibration_round_trip);
	tcase_add_test(t, calibration_round_trip_partial);
	tcase_add_test(t, calibration_apply);
	tcase_add_test(t, collective_overhead_platform_and_calibration);
	tcase_add_test(t, calibration_files);
	suite_add_tcase(s, t);

	t = tcase_create("jobs");
	tcase_add_test(t, job_defaults);
	tcase_add_test(t, job_full_file);
	tcase_add_test(t, job_unused_zero_settings);
	tcase_add_test(t, job_auto_buckets_resolve_from_the_hidden_size);
	tcase_add_test(t, job_minimal_file);
	tcase_add_test(t, job_errors);
	tcase_add_test(t, job_impl_hf_trainer);
	tcase_add_test(t, job_cp_comm_type);
	tcase_add_test(t, calibration_gpu_kernel_and_attention_points);
	tcase_add_test(t, job_error_leaves_outputs);
	tcase_add_test(t, error_null_is_allowed);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
