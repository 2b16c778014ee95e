/* Model definitions (models/<name>.yaml) and their parameter counts. */
#include "config/config.h"
#include "config/ranges.h"
#include "config/yamltree.h"

#include <stdio.h>
#include <string.h>

/* Norm parameters over h features: RMSNorm has a weight, LayerNorm a weight and a bias. */
static double norm_params(const config_model *m)
{
	return m->norm == CONFIG_NORM_LAYERNORM ? 2.0 * m->hidden : (double)m->hidden;
}

double config_model_layer_params(const config_model *m)
{
	double h = m->hidden, a = m->heads, g = m->kv_heads, d = m->head_dim;
	double q = h * a * d, kv = 2.0 * h * g * d, o = a * d * h;
	double bias = m->qkv_bias ? a * d + 2.0 * g * d : 0.0;
	double mlp = 3.0 * h * m->ffn; /* SwiGLU: gate, up (h x ffn) and down (ffn x h) */
	return q + kv + o + bias + mlp + 2.0 * norm_params(m);
}

double config_model_position_params(const config_model *m)
{
	return m->position == CONFIG_POSITION_LEARNED ? (double)m->max_position * m->hidden : 0.0;
}

double config_model_params(const config_model *m)
{
	double emb = (double)m->vocab * m->hidden;
	double head = m->tied_embeddings ? 0.0 : emb;
	return emb + config_model_position_params(m) + head + m->layers * config_model_layer_params(m) +
	       norm_params(m);
}

static const char *const model_keys[] = {
	"name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
	"tied_embeddings", "qkv_bias", "mlp", "norm", "max_position", "position", NULL,
};

static bool model_read(const yt_doc *doc, config_model *m, config_error *err)
{
	static const char *const mlps[] = {"swiglu"};
	static const char *const norms[] = {"rmsnorm", "layernorm"};
	static const char *const positions[] = {"rope", "alibi", "learned"};
	const yt_node *t;
	if (!yt_top(doc, "model", &t, err) || !yt_check_keys(t, model_keys, err))
		return false;
	bool has_kv = false, has_d = false;
	int mlp = CONFIG_MLP_SWIGLU, norm = CONFIG_NORM_RMSNORM, position = CONFIG_POSITION_ROPE;
	if (!yt_string(t, "name", true, m->name, sizeof m->name, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_LAYERS, true, &m->layers, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_HIDDEN, true, &m->hidden, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_HEADS, true, &m->heads, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_KV_HEADS, false, &m->kv_heads, &has_kv, err) ||
	    !yt_range_int(t, CONFIG_R_HEAD_DIM, false, &m->head_dim, &has_d, err) ||
	    !yt_range_int(t, CONFIG_R_FFN, true, &m->ffn, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_VOCAB, true, &m->vocab, NULL, err) ||
	    !yt_range_int(t, CONFIG_R_MAX_POSITION, true, &m->max_position, NULL, err) ||
	    !yt_bool(t, "tied_embeddings", false, &m->tied_embeddings, NULL, err) ||
	    !yt_bool(t, "qkv_bias", false, &m->qkv_bias, NULL, err) ||
	    !yt_enum(t, "mlp", false, mlps, 1, &mlp, NULL, err) ||
	    !yt_enum(t, "norm", false, norms, 2, &norm, NULL, err) ||
	    !yt_enum(t, "position", false, positions, 3, &position, NULL, err))
		return false;
	m->position = (config_position)position;
	m->mlp = (config_mlp)mlp;
	m->norm = (config_norm)norm;
	/* Hugging Face defaults: num_key_value_heads = num_attention_heads, head_dim = h / a. */
	if (!has_kv)
		m->kv_heads = m->heads;
	if (!has_d) {
		if (m->hidden % m->heads != 0)
			return yt_fail(err, t, "'hidden' (%d) is not a multiple of 'heads' (%d), expected an "
				       "explicit 'head_dim'", m->hidden, m->heads);
		m->head_dim = m->hidden / m->heads;
	}
	/* Grouped-query attention: each kv head serves heads/kv_heads query heads. */
	if (m->heads % m->kv_heads != 0) {
		const yt_node *v = yt_find(t, "kv_heads");
		return yt_fail(err, v ? v : t, "'kv_heads' (%d) does not divide 'heads' (%d), expected a divisor of %d",
			       m->kv_heads, m->heads, m->heads);
	}
	return true;
}

bool config_load_model(const char *name_or_path, config_model *out, config_error *err)
{
	config_model m;
	memset(&m, 0, sizeof m);
	if (!config_find_data("models", name_or_path, m.path, sizeof m.path, err))
		return false;
	yt_doc *doc;
	if (!yt_load(m.path, &doc, err))
		return false;
	bool ok = model_read(doc, &m, err);
	yt_free(doc);
	if (ok)
		*out = m;
	return ok;
}

bool config_model_check(const config_model *m, config_error *err)
{
	const config_range_value v[] = {
		{CONFIG_R_LAYERS, m->layers},   {CONFIG_R_HIDDEN, m->hidden}, {CONFIG_R_HEADS, m->heads},
		{CONFIG_R_KV_HEADS, m->kv_heads}, {CONFIG_R_HEAD_DIM, m->head_dim}, {CONFIG_R_FFN, m->ffn},
		{CONFIG_R_VOCAB, m->vocab},     {CONFIG_R_MAX_POSITION, m->max_position},
	};
	return config_range_check_all("model", m->name, v, sizeof v / sizeof v[0], err);
}
